#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/cli.h"

fmt_kind fmt_parse_u64(const char *s, uint64_t max, uint64_t *out, fmt_err *e)
{
	if (!s || !isdigit((unsigned char)s[0]))
		return fmt_fail(e, FMT_USAGE, "'%s' is not a whole number", s ? s : "");
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return fmt_fail(e, FMT_USAGE, "'%s' is not a whole number from 0 to %llu", s,
				(unsigned long long)max);
	*out = v;
	return FMT_OK;
}

fmt_kind fmt_parse_size(const char *s, uint64_t *out, fmt_err *e)
{
	static const struct { const char *suffix; uint64_t mult; } units[] = {
		{ "", 1 }, { "B", 1 },
		{ "KB", 1000ULL }, { "MB", 1000000ULL }, { "GB", 1000000000ULL }, { "TB", 1000000000000ULL },
		{ "KiB", 1ULL << 10 }, { "MiB", 1ULL << 20 }, { "GiB", 1ULL << 30 }, { "TiB", 1ULL << 40 },
		{ "K", 1000ULL }, { "M", 1000000ULL }, { "G", 1000000000ULL }, { "T", 1000000000000ULL },
	};
	if (!s || !isdigit((unsigned char)s[0]))
		return fmt_fail(e, FMT_USAGE, "'%s' is not a size (e.g. 4GB, 500MB, 2GiB, 123)", s ? s : "");
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return fmt_fail(e, FMT_USAGE, "size '%s' is too large", s);
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcasecmp(end, units[i].suffix) != 0)
			continue;
		uint64_t bytes;
		if (fmt_mul_u64(v, units[i].mult, &bytes))
			return fmt_fail(e, FMT_USAGE, "size '%s' is too large", s);
		*out = bytes;
		return FMT_OK;
	}
	return fmt_fail(e, FMT_USAGE, "'%s': unknown size unit (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s);
}

int fmt_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
