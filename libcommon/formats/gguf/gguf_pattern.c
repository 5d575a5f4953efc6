/* --tensor-type PATTERN as llama-quantize reads it: a std::regex (ECMAScript) found anywhere in
 * the name, the pattern lower-cased first. fmtkit matches with POSIX extended expressions
 * (regcomp), so the ECMAScript forms the two read differently are rewritten: \d (POSIX reads it
 * as a plain 'd'), \w and \s (GNU extensions only), (?: ... ), [^] (any character), lazy
 * quantifiers (the same matches for a search that only asks whether there is one), a } that
 * closes no {n,m}, and escapes inside [...], where a POSIX backslash is itself. What has no
 * POSIX form (lookarounds, an escaped ] - ^ or \ inside [...], an empty []) is refused rather
 * than read otherwise. */
#include <string.h>
#include "gguf_internal.h"

static const char TOO_LONG[] = "too many characters once rewritten for POSIX";

typedef struct ere_out {
	char *p;
	size_t left;
} ere_out;

static int put(ere_out *o, const char *s)
{
	size_t n = strlen(s);
	if (n >= o->left)
		return -1;
	memcpy(o->p, s, n);
	o->p += n;
	o->left -= n;
	*o->p = '\0';
	return 0;
}

static int put_char(ere_out *o, char c)
{
	const char s[2] = { c, '\0' };
	return put(o, s);
}

/* A class escape (\d \w \s) as the inside of a bracket expression, or NULL. */
static const char *class_body(char c)
{
	return c == 'd' ? "0-9" : c == 'w' ? "[:alnum:]_" : c == 's' ? "[:space:]" : NULL;
}

/* Inside [...] from just after '[' (and '^'): copied up to its ']'; returns the characters of
 * in taken, 0 when it cannot be written in POSIX. */
static size_t bracket(const char *in, ere_out *o, const char **why)
{
	size_t i = 0;
	if (in[0] == ']')   /* ECMAScript's empty []; POSIX takes that ] as a member */
		return *why = "an empty [], which matches nothing", 0;
	for (; in[i] && in[i] != ']'; i++) {
		if (in[i] == '[' && in[i + 1] == ':') {   /* [:digit:] as it is */
			const char *end = strstr(in + i + 2, ":]");
			if (!end)
				return *why = "an unclosed [: in a bracket expression", 0;
			const size_t stop = (size_t)(end - in) + 1;   /* its ']' */
			for (; i <= stop; i++)
				if (put_char(o, in[i]) < 0)
					return *why = TOO_LONG, 0;
			i = stop;
		} else if (in[i] == '\\') {
			const char *body = class_body(in[i + 1]);
			if (!in[i + 1] || strchr("]-^\\", in[i + 1]))
				return *why = "an escaped ] - ^ or \\ inside [...] (in POSIX: ] first, - last, ^ not first)", 0;
			if (put(o, body ? body : (const char[]){ in[i + 1], '\0' }) < 0)
				return *why = TOO_LONG, 0;
			i++;
		} else if (put_char(o, in[i]) < 0) {
			return *why = TOO_LONG, 0;
		}
	}
	if (in[i] != ']')
		return *why = "an unclosed [", 0;
	return put_char(o, ']') < 0 ? (*why = TOO_LONG, 0) : i + 1;
}

static int is_quantifier_end(char c)
{
	return c == '*' || c == '+' || c == '?' || c == '}';
}

int fmt_gguf_pattern_to_ere(const char *in, char *out, size_t cap, const char **why)
{
	ere_out o = { out, cap };
	char last = '\0';   /* the last character written outside [...], '\0' after an escape */
	int brace = 0;       /* inside a {n,m} quantifier */
	*why = TOO_LONG;
	if (cap == 0)
		return -1;
	*out = '\0';
	for (size_t i = 0; in[i];) {
		const char c = in[i];
		if (c == '\\' && in[i + 1]) {
			const char *body = class_body(in[i + 1]);
			char cls[16] = "[";
			if (body)
				strcat(strcat(cls, body), "]");
			if (put(&o, body ? cls : (const char[]){ '\\', in[i + 1], '\0' }) < 0)
				return -1;
			i += 2;
			last = '\0';
		} else if (c == '[' && in[i + 1] == '^' && in[i + 2] == ']') {
			if (put(&o, ".") < 0)   /* ECMAScript's [^]: any character */
				return -1;
			i += 3;
			last = '.';
		} else if (c == '[') {
			size_t skip = in[i + 1] == '^' ? 2 : 1;
			if (put(&o, skip == 2 ? "[^" : "[") < 0)
				return -1;
			size_t n = bracket(in + i + skip, &o, why);
			if (n == 0)
				return -1;
			i += skip + n;
			last = ']';
		} else if (c == '(' && in[i + 1] == '?') {
			if (in[i + 2] != ':')
				return *why = "a lookaround (?= (?! (?<=, which POSIX expressions do not have", -1;
			if (put(&o, "(") < 0)
				return -1;
			i += 3;
			last = '(';
		} else if (c == '?' && is_quantifier_end(last)) {
			i++;   /* lazy: the same names match */
			last = '\0';
		} else {
			if (put_char(&o, c) < 0)
				return -1;
			i++;
			last = c == '}' && !brace ? '\0' : c;   /* a } that closes no {n,m} is a plain one */
			brace = c == '{' ? 1 : c == '}' ? 0 : brace;
		}
	}
	return 0;
}
