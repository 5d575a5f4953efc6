/* The Parquet logical types fmtkit reads as text (utf8), since its column types have no
 * equivalent: DECIMAL as its exact decimal number, TIME as the time of day, UUID in its
 * canonical form, INTERVAL as an ISO 8601 duration. Each value is turned into its text as the
 * rows are taken (pq_read.c), and the statistics fmt-inspect shows too. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "fmt/checked.h"
#include "pq_internal.h"

int fmt_pq_is_text(const pq_leaf *l)
{
	return l->conv == CONV_DECIMAL || l->conv == CONV_TIME || l->conv == CONV_UUID || l->conv == CONV_INTERVAL;
}

int fmt_pq_decimal_digits(int bytes)
{
	/* floor(log10(2^(8 bytes - 1) - 1)): 2^k is never a power of ten */
	return bytes < 1 ? 0 : (int)((8 * (int64_t)bytes - 1) * 30103 / 100000);
}

/* The magnitude of the big-endian two's complement integer p[0..n) (1 <= n <= PQ_DECIMAL_BYTES)
 * as decimal digits at out (NUL-ended); *neg: it is negative. */
static void big_digits(const uint8_t *p, size_t n, int *neg, char *out)
{
	uint8_t m[PQ_DECIMAL_BYTES];
	*neg = p[0] >> 7;
	unsigned carry = 1;
	for (size_t i = n; i-- > 0;) {  /* the magnitude: negated (inverted, plus one) when negative */
		unsigned b = *neg ? (uint8_t)~p[i] + carry : p[i];
		carry = *neg ? b >> 8 : 0;
		m[i] = (uint8_t)b;
	}
	char rev[PQ_TEXT_MAX];
	size_t d = 0, first = 0;
	do {                            /* divide by ten until nothing is left */
		unsigned rem = 0;
		for (size_t i = first; i < n; i++) {
			unsigned cur = rem << 8 | m[i];
			m[i] = (uint8_t)(cur / 10);
			rem = cur % 10;
		}
		rev[d++] = (char)('0' + rem);
		while (first < n && m[first] == 0)
			first++;
	} while (first < n);
	for (size_t i = 0; i < d; i++)
		out[i] = rev[d - 1 - i];
	out[d] = 0;
}

/* A DECIMAL of scale digits after the point: its unscaled value p[0..n) as an INT32, an INT64
 * (little-endian) or big-endian bytes. */
static int decimal_text(const pq_leaf *l, const uint8_t *p, size_t n, char *out)
{
	char digits[PQ_TEXT_MAX];
	int neg;
	if (l->ptype == PT_INT32 || l->ptype == PT_INT64) {
		int64_t v = l->ptype == PT_INT32 ? (int32_t)fmt_rd_u32(p) : (int64_t)fmt_rd_u64(p);
		uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
		neg = v < 0;
		snprintf(digits, sizeof digits, "%" PRIu64, mag);
	} else {
		if (n < 1 || n > PQ_DECIMAL_BYTES)
			return -1;
		big_digits(p, n, &neg, digits);
	}
	size_t d = strlen(digits), scale = (size_t)l->scale, at = 0;
	if (neg && strcmp(digits, "0") != 0)
		out[at++] = '-';
	if (scale == 0) {
		memcpy(out + at, digits, d + 1);
		return (int)(at + d);
	}
	if (d <= scale) {               /* 0.00ddd */
		out[at++] = '0';
		out[at++] = '.';
		memset(out + at, '0', scale - d);
		at += scale - d;
		memcpy(out + at, digits, d);
		return (int)(at + d);
	}
	memcpy(out + at, digits, d - scale);
	at += d - scale;
	out[at++] = '.';
	memcpy(out + at, digits + d - scale, scale);
	return (int)(at + scale);
}

/* A TIME: units since midnight, up to 24:00:00 (a day's end), HH:MM:SS and the fraction of a
 * second in the unit's digits when there is one; Z when adjusted to UTC. */
static int time_text(const pq_leaf *l, const uint8_t *p, char *out)
{
	static const int64_t per_sec[] = { 0, 1000, 1000000, 1000000000 };
	static const int digits[] = { 0, 3, 6, 9 };
	int64_t v = l->ptype == PT_INT32 ? (int32_t)fmt_rd_u32(p) : (int64_t)fmt_rd_u64(p);
	int64_t unit = per_sec[l->unit];
	if (v < 0 || v > 86400 * unit)
		return -1;
	int64_t secs = v / unit, frac = v % unit;
	int n = snprintf(out, PQ_TEXT_MAX, "%02d:%02d:%02d", (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
	if (frac)
		n += snprintf(out + n, PQ_TEXT_MAX - (size_t)n, ".%0*" PRId64, digits[l->unit], frac);
	if (l->utc)
		out[n++] = 'Z', out[n] = 0;
	return n;
}

/* A UUID's 16 bytes as 8-4-4-4-12 lowercase hex digits. */
static int uuid_text(const uint8_t *p, char *out)
{
	int n = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[n++] = '-';
		n += snprintf(out + n, 3, "%02x", p[i]);
	}
	return n;
}

/* An INTERVAL (months, days, milliseconds: three little-endian uint32) as an ISO 8601 duration
 * with the parts that are not zero: PnYnMnDTnHnMn.nnnS (twelve months a year, no days folded
 * into months nor hours into days, as their lengths vary); PT0S for none. */
static int interval_text(const uint8_t *p, char *out)
{
	uint32_t months = fmt_rd_u32(p), days = fmt_rd_u32(p + 4), ms = fmt_rd_u32(p + 8);
	int n = snprintf(out, PQ_TEXT_MAX, "P");
	if (months / 12)
		n += snprintf(out + n, PQ_TEXT_MAX - (size_t)n, "%" PRIu32 "Y", months / 12);
	if (months % 12)
		n += snprintf(out + n, PQ_TEXT_MAX - (size_t)n, "%" PRIu32 "M", months % 12);
	if (days)
		n += snprintf(out + n, PQ_TEXT_MAX - (size_t)n, "%" PRIu32 "D", days);
	if (ms || n == 1) {
		uint32_t s = ms / 1000;
		n += snprintf(out + n, PQ_TEXT_MAX - (size_t)n, "T");
		if (s / 3600)
			n += snprintf(out + n, PQ_TEXT_MAX - (size_t)n, "%" PRIu32 "H", s / 3600);
		if (s / 60 % 60)
			n += snprintf(out + n, PQ_TEXT_MAX - (size_t)n, "%" PRIu32 "M", s / 60 % 60);
		if (s % 60 || ms % 1000 || ms == 0)
			n += snprintf(out + n, PQ_TEXT_MAX - (size_t)n, "%" PRIu32, s % 60);
		if (ms % 1000)
			n += snprintf(out + n, PQ_TEXT_MAX - (size_t)n, ".%03" PRIu32, ms % 1000);
		if (s % 60 || ms % 1000 || ms == 0)
			out[n++] = 'S', out[n] = 0;
	}
	return n;
}

int fmt_pq_text(const pq_leaf *l, const uint8_t *p, size_t n, char *out)
{
	switch (l->conv) {
	case CONV_DECIMAL: return decimal_text(l, p, n, out);
	case CONV_TIME: return time_text(l, p, out);
	case CONV_UUID: return uuid_text(p, out);
	case CONV_INTERVAL: return interval_text(p, out);
	default: return -1;
	}
}
