/* fmt-convert --embed-tests: a .nk file's TCAS block (specs/nk.md §8) written from inputs, the
 * expected outputs computed with the runtime (float, or int8 dequantized with the output's
 * scale and zero point); the file before it kept byte for byte, bit 0 of the flags set. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/registry.h"
#include "nkrt_internal.h"

/* Growing output bytes. */
typedef struct bytes {
	uint8_t *p;
	size_t n, cap;
} bytes;

static int put(bytes *b, const void *data, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (!q)
			return -1;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
	return 0;
}

static int put_u32(bytes *b, uint32_t v)
{
	uint8_t w[4];
	fmt_wr_u32(w, v);
	return put(b, w, 4);
}

static int put_f32(bytes *b, float f)
{
	return put_u32(b, fmt_f32_bits(f));
}

/* One case as §8 stores it: name (padded to 4 with its length byte), label, inputs, expected. */
static int put_case(bytes *b, const nk_model *nm, const char *name, size_t name_len, int32_t label,
		    const void *input, const float *expected)
{
	static const uint8_t zeros[4] = { 0 };
	uint8_t len = (uint8_t)name_len;
	size_t pad = (4 - (1 + name_len) % 4) % 4;
	int bad = put(b, &len, 1) || put(b, name, name_len) || put(b, zeros, pad) || put_u32(b, (uint32_t)label) ||
		  put_u32(b, (uint32_t)nm->input_count);
	if (nm->quantized)
		bad = bad || put(b, input, nm->input_count);
	else
		for (uint64_t i = 0; !bad && i < nm->input_count; i++)
			bad = put_f32(b, ((const float *)input)[i]);
	bad = bad || put_u32(b, (uint32_t)nm->output_count);
	for (uint64_t i = 0; !bad && i < nm->output_count; i++)
		bad = put_f32(b, expected[i]);
	return bad;
}

/* The network's outputs as the TCAS stores them: float32, or an int8 network's codes
 * dequantized ((q - zero point) x scale). Not finite: refused, no tolerance could check it. */
static fmt_kind expected_of(const nk_model *nm, const nk_engine *en, const void *y, float *out, size_t index,
			    fmt_err *e)
{
	for (uint64_t i = 0; i < nm->output_count; i++) {
		out[i] = nm->quantized ? (float)(((const int8_t *)y)[i] - en->out_zp) * en->out_scale
				       : ((const float *)y)[i];
		if (!isfinite(out[i]))
			return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu: output %llu of the network is not finite (%g)",
					index, (unsigned long long)i, (double)out[i]);
	}
	return FMT_OK;
}

static fmt_kind check_cases(const nk_model *nm, const nk_embed_case *cases, size_t n_cases, fmt_err *e)
{
	if (n_cases < 1 || n_cases > NK_MAX_CASES)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%zu test cases: a .nk file holds 1 to %d", n_cases, NK_MAX_CASES);
	for (size_t c = 0; c < n_cases; c++) {
		const nk_embed_case *k = &cases[c];
		if (k->n != nm->input_count)
			return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu has %zu input values, the network takes %llu", c,
					k->n, (unsigned long long)nm->input_count);
		size_t bad = fmt_nk_first_nonfinite(k->values, k->n);
		if (bad < k->n)
			return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu: input value %zu (%g) is not a finite float32", c,
					bad, k->values[bad]);
		if (k->label < -1 || (k->label >= 0 && (uint64_t)k->label >= nm->output_count))
			return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu: label %d is not -1 or an output index below %llu",
					c, k->label, (unsigned long long)nm->output_count);
		if (k->name && (k->name_len < 1 || k->name_len > 127))
			return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu: a name of %zu bytes (1 to 127)", c, k->name_len);
	}
	return FMT_OK;
}

/* Every case run, its expected outputs computed and stored; a label the network does not
 * predict is refused (the file would fail its own test). */
static fmt_kind put_cases(bytes *b, const nk_model *nm, nk_engine *en, const nk_embed_case *cases, size_t n_cases,
			  fmt_err *e)
{
	void *in = malloc(nm->input_count * sizeof(float));
	float *want = malloc(nm->output_count * sizeof(float));
	fmt_kind k = in && want ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t c = 0; k == FMT_OK && c < n_cases; c++) {
		const nk_embed_case *kc = &cases[c];
		nk_values v = { .v = (double *)kc->values, .n = kc->n };
		if ((k = fmt_nk_values_to_input(&v, nm, 1, in, e)) != FMT_OK)
			break;
		const void *y = fmt_nk_run(en, in);
		uint64_t got = fmt_nk_argmax(nm, y, nm->output_count);
		if (kc->label >= 0 && got != (uint64_t)kc->label) {
			k = fmt_fail(e, FMT_TEST_FAILED, "case %zu: the network's argmax is %llu, its label %d "
				     "(the embedded test would fail)", c, (unsigned long long)got, kc->label);
			break;
		}
		if ((k = expected_of(nm, en, y, want, c, e)) != FMT_OK)
			break;
		char fallback[32];
		const char *name = kc->name;
		size_t name_len = kc->name_len;
		if (!name) {
			name_len = (size_t)snprintf(fallback, sizeof fallback, "case %zu", c);
			name = fallback;
		}
		if (put_case(b, nm, name, name_len, kc->label, in, want))
			k = fmt_fail(e, FMT_IO, "out of memory");
	}
	free(in);
	free(want);
	return k;
}

/* The new file passes its own suite: what nk-run --test and fmt-verify --run-tests will find.
 * Out of memory (IoError) on the way is that, not a file this writer got wrong (internal). */
static fmt_kind self_check(const bytes *b, fmt_err *e)
{
	nk_model nm;
	nk_engine en;
	fmt_kind k = fmt_nk_parse_own(&nm, b->p, b->n, "the file with its tests", e);
	if (k != FMT_OK)
		return k;
	if ((k = fmt_nk_engine_init(&en, &nm, fmt_nk_kernels_get(), e)) == FMT_OK) {
		unsigned passed = 0, failed = 0;
		fmt_kind t = fmt_nk_test_suite(&nm, &en, NULL, NULL, &passed, &failed, e);
		if (t == FMT_IO)
			k = t;
		else if (t != FMT_OK)
			k = fmt_fail(e, FMT_INTERNAL, "the file with its tests fails them (%u of %u)", failed, passed + failed);
		fmt_nk_engine_free(&en);
	}
	fmt_nk_free(&nm);
	return k;
}

fmt_kind fmt_nk_embed_tests(const void *data, size_t size, const nk_embed_case *cases, size_t n_cases, float tolerance,
			    uint8_t **out, size_t *out_size, fmt_err *e)
{
	nk_model nm;
	nk_engine en;
	bytes b = { 0 };
	*out = NULL;
	*out_size = 0;
	if (!(tolerance >= 0) || !isfinite(tolerance))
		return fmt_fail(e, FMT_USAGE, "the tolerance must be a finite number from 0");
	fmt_kind k = fmt_nk_parse(&nm, data, size, e);
	if (k != FMT_OK)
		return k;
	if ((k = check_cases(&nm, cases, n_cases, e)) == FMT_OK)
		k = fmt_nk_check_work(&nm, NK_DEFAULT_MAX_WORK, e);
	if (k == FMT_OK && (k = fmt_nk_engine_init(&en, &nm, fmt_nk_kernels_get(), e)) == FMT_OK) {
		/* the network as it is, without the tests it had (TCAS and what follows it) */
		uint64_t end = nm.payload_offset + nm.weights_bytes + nm.biases_bytes;
		int bad = put(&b, data, (size_t)end) || put(&b, "TCAS", 4) || put_u32(&b, (uint32_t)n_cases) ||
			  put_f32(&b, tolerance);
		k = bad ? fmt_fail(e, FMT_IO, "out of memory") : put_cases(&b, &nm, &en, cases, n_cases, e);
		fmt_nk_engine_free(&en);
	}
	if (k == FMT_OK) {
		uint16_t flags = (uint16_t)(nm.flags | NK_FLAG_TESTS);
		flags = nm.quantized ? (uint16_t)(flags | NK_FLAG_INT8_TESTS) : (uint16_t)(flags & ~NK_FLAG_INT8_TESTS);
		fmt_wr_u16(b.p + 10, flags);
		k = self_check(&b, e);
	}
	fmt_nk_free(&nm);
	if (k != FMT_OK) {
		free(b.p);
		return k;
	}
	*out = b.p;
	*out_size = b.n;
	return FMT_OK;
}
