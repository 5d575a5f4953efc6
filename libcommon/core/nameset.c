/* A set of borrowed strings (fmt/nameset.h): open addressing, FNV-1a, at most half full. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/nameset.h"

static uint64_t hash_name(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

static int same_name(const char *held, const char *name, size_t len)
{
	return strncmp(held, name, len) == 0 && held[len] == '\0';
}

/* The slot that holds name[0..len), or the free one where it would go. */
static size_t slot_of(const fmt_nameset_slot *slots, size_t cap, const char *name, size_t len)
{
	size_t j = (size_t)hash_name(name, len) & (cap - 1);
	while (slots[j].name && !same_name(slots[j].name, name, len))
		j = (j + 1) & (cap - 1);
	return j;
}

static int grow(fmt_nameset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64;
	if (cap > SIZE_MAX / sizeof *s->slots)
		return -1;
	fmt_nameset_slot *slots = calloc(cap, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i].name)
			slots[slot_of(slots, cap, s->slots[i].name, strlen(s->slots[i].name))] = s->slots[i];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int fmt_nameset_add_at(fmt_nameset *s, const char *name, size_t at)
{
	if ((s->used + 1) * 2 > s->cap && grow(s) != 0)
		return -1;
	s->offered++;
	size_t j = slot_of(s->slots, s->cap, name, strlen(name));
	if (s->slots[j].name)
		return 0;
	s->slots[j] = (fmt_nameset_slot){ name, at };
	s->used++;
	return 1;
}

int fmt_nameset_add(fmt_nameset *s, const char *name)
{
	return fmt_nameset_add_at(s, name, s->used);
}

long fmt_nameset_find_prefix(const fmt_nameset *s, const char *name, size_t len)
{
	if (!s->cap)
		return -1;
	const fmt_nameset_slot *slot = &s->slots[slot_of(s->slots, s->cap, name, len)];
	return slot->name ? (long)slot->ordinal : -1;
}

long fmt_nameset_find(const fmt_nameset *s, const char *name)
{
	return fmt_nameset_find_prefix(s, name, strlen(name));
}

void fmt_nameset_free(fmt_nameset *s)
{
	free(s->slots);
	memset(s, 0, sizeof *s);
}
