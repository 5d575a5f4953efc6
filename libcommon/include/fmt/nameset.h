/* A set of borrowed strings with their order of insertion, to find a duplicate name or look a
 * name up in O(1): a file's thousands of columns, tensors or entries checked pair by pair took
 * seconds to hours (a 65,536-column CSV 7 s to open; a 4.5 MB importance matrix of 200,000
 * entries more than a minute). */
#ifndef FMT_NAMESET_H
#define FMT_NAMESET_H

#include <stddef.h>

typedef struct fmt_nameset_slot {
	const char *name;            /* NULL: free */
	size_t ordinal;              /* how many names were added before it (or fmt_nameset_add_at's) */
} fmt_nameset_slot;

typedef struct fmt_nameset {
	fmt_nameset_slot *slots;
	size_t cap, used;
	size_t offered;              /* names given to add or add_at, those already there included */
} fmt_nameset;

/* 1 if name was new (now in the set, its ordinal the number of names before it), 0 if it was
 * there, -1 on out of memory. The string must outlive the set. */
int fmt_nameset_add(fmt_nameset *s, const char *name);
/* The same, the name's ordinal being at (its place in the caller's array, so that a name given
 * twice there leaves the places of the others right; the first place is kept). */
int fmt_nameset_add_at(fmt_nameset *s, const char *name, size_t at);
/* The ordinal of name, or -1 when it is not in the set. */
long fmt_nameset_find(const fmt_nameset *s, const char *name);
/* The same for the name made of name's first len bytes. */
long fmt_nameset_find_prefix(const fmt_nameset *s, const char *name, size_t len);
void fmt_nameset_free(fmt_nameset *s);

#endif
