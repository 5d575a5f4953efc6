/* What each subcommand prints (text, or one JSON object with -j), and the signed evidence. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>
#include "fmt/cli_keys.h"
#include "fmt/minisign.h"
#include "fmt/out.h"
#include "fmt/report.h"
#include "fmt/progress.h"
#include "wm.h"

int wm_fail(const wm_opts *o, const char *file, const fmt_err *e)
{
	return fmt_report_failed(o->records, TOOL, o->input, file, e, o->common.json);
}

/* j (its reference taken) as one JSON line of the records: 0, or, when it could not be made or
 * written (out of memory, a write error), that error reported. */
static int json_out(const wm_opts *o, json_t *j)
{
	fmt_err e;
	fmt_err_clear(&e);
	return fmt_json_emit(wm_records, j, &e) == FMT_OK ? 0 : wm_fail(o, NULL, &e);
}

static json_t *jstr(const char *s)
{
	return fmt_json_string(s, strlen(s));
}

static void out_name(const char *s)
{
	fmt_out_escaped(stdout, s, strlen(s));
}

static const char *kind_word(const wm_result *r)
{
	return r->is_table ? "column" : "tensor";
}

/* log10 p, and p itself when it does not underflow. */
static double log10_p(double ln_p)
{
	return ln_p / M_LN10;
}

static void left_alone_line(FILE *f, const wm_result *r, const char *why)
{
	if (!r->n_left)
		return;
	fprintf(f, "left alone (%s):", why);
	for (size_t i = 0; i < r->n_left; i++) {
		fprintf(f, " ");
		fmt_out_escaped(f, r->left_alone[i], strlen(r->left_alone[i]));
	}
	fprintf(f, "\n");
}

/* embed's JSON line on f (standard output, or standard error when OUT goes there); with -q none. */
static int embed_json_line(const wm_opts *o, FILE *f, json_t *j)
{
	fmt_err e;
	fmt_err_clear(&e);
	if (j && o->common.quiet) {
		json_decref(j);
		return 0;
	}
	return fmt_json_emit(f, j, &e) == FMT_OK ? 0 : wm_fail(o, NULL, &e);
}

/* "IN -> OUT (format): buyer ID", the start of embed's text report. */
static void embed_head(FILE *f, const char *input, const char *output, const wm_opts *o, const wm_result *r)
{
	fmt_out_escaped(f, input, strlen(input));
	fprintf(f, " -> ");
	fmt_out_escaped(f, output, strlen(output));
	fprintf(f, " (%s%s): buyer ", r->out_format, o->dry_run ? "; dry run, nothing written" : "");
	fmt_out_escaped(f, o->buyer, strlen(o->buyer));
}

/* embed's table: per tensor or column its values, how many changed, the largest relative change
 * (fmtkit-wm/1) or the RMS change over the std (rms, fmtkit-ss), and the moments' changes. */
static void embed_table(FILE *f, const wm_result *r, int rms)
{
	fprintf(f, "  %-32s %-5s %12s %12s %11s %11s %11s\n", kind_word(r), "dtype", "values", "marked",
		rms ? "rms/std" : "max_rel", "mean_rel", "std_rel");
	for (size_t i = 0; i < r->n_cols; i++) {
		const wm_column *c = r->cols[i];
		double mean_rel, std_rel;
		fmt_wm_dist_moments(&c->dist, &mean_rel, &std_rel);
		fprintf(f, "  ");
		fmt_out_escaped(f, c->name, strlen(c->name));
		int pad = 32 - (int)strlen(c->name);
		fprintf(f, "%*s %-5s %12llu %12llu %11.3e %11.3e %11.3e\n", pad > 0 ? pad : 0, "", c->dtype,
			(unsigned long long)c->dist.values, (unsigned long long)c->dist.marked,
			rms ? fmt_wm_dist_rms_rel(&c->dist) : c->dist.max_rel, mean_rel, std_rel);
	}
}

static double rms_rel_max(const wm_result *r)
{
	double rms_max = 0;
	for (size_t i = 0; i < r->n_cols; i++)
		rms_max = fmax(rms_max, fmt_wm_dist_rms_rel(&r->cols[i]->dist));
	return rms_max;
}

/* fmtkit-ss's record: per tensor the RMS change relative to the tensor's std (the distortion
 * budget; for fmtkit-ss/2 the std from its groups' float32 sums). */
static json_t *embed_json_ss(const char *input, const char *output, const wm_opts *o, const char *hex,
			     const char *pay, const wm_result *r, const fmt_wm_dist *total)
{
	json_t *cols = json_array(), *left = json_array();
	for (size_t i = 0; i < r->n_cols; i++) {
		const wm_column *c = r->cols[i];
		double mean_rel, std_rel;
		fmt_wm_dist_moments(&c->dist, &mean_rel, &std_rel);
		json_array_append_new(cols, json_pack("{s:o, s:s, s:o, s:o, s:f, s:f, s:f}", "name", jstr(c->name),
			"dtype", c->dtype, "values", fmt_json_u64(c->dist.values), "marked", fmt_json_u64(c->dist.marked),
			"rms_rel_change", fmt_wm_dist_rms_rel(&c->dist), "mean_rel_change", mean_rel,
			"std_rel_change", std_rel));
	}
	for (size_t i = 0; i < r->n_left; i++)
		json_array_append_new(left, jstr(r->left_alone[i]));
	return json_pack("{s:o, s:o, s:s, s:b, s:o, s:s, s:s, s:s, s:f, s:s, s:o, s:o, s:f, s:o, s:o}",
		"input", jstr(input), "output", jstr(output), "format", r->out_format, "dry_run", o->dry_run,
		"buyer", jstr(o->buyer), "buyer_hash", hex, "payload", pay, "scheme", o->ss->version == 1 ? "fmtkit-ss/1" : "fmtkit-ss/2",
		"strength", o->ss->strength, "kind", "tensors", "values", fmt_json_u64(total->values),
		"marked", fmt_json_u64(total->marked), "rms_rel_change_max", rms_rel_max(r), "tensors", cols,
		"left_alone", left);
}

/* fmtkit-wm/1's record. */
static json_t *embed_json_qim(const char *input, const char *output, const wm_opts *o, const fmt_wm_params *prm,
			      const char *hex, const char *pay, const wm_result *r, const fmt_wm_dist *total)
{
	json_t *cols = json_array(), *left = json_array();
	for (size_t i = 0; i < r->n_cols; i++) {
		const wm_column *c = r->cols[i];
		double mean_rel, std_rel;
		fmt_wm_dist_moments(&c->dist, &mean_rel, &std_rel);
		json_array_append_new(cols, json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:f, s:f, s:f}",
			"name", jstr(c->name), "dtype", c->dtype, "values", fmt_json_u64(c->dist.values),
			"eligible", fmt_json_u64(c->dist.eligible), "selected", fmt_json_u64(c->dist.selected),
			"marked", fmt_json_u64(c->dist.marked), "max_rel_change", c->dist.max_rel,
			"mean_rel_change", mean_rel, "std_rel_change", std_rel));
	}
	for (size_t i = 0; i < r->n_left; i++)
		json_array_append_new(left, jstr(r->left_alone[i]));
	return json_pack("{s:o, s:o, s:s, s:b, s:o, s:s, s:s, s:f, s:i, s:s, s:o, s:o, s:f, s:o, s:o}",
		"input", jstr(input), "output", jstr(output), "format", r->out_format, "dry_run", o->dry_run,
		"buyer", jstr(o->buyer), "buyer_hash", hex, "payload", pay, "density", prm->density,
		"strength_bits", prm->strength, "kind", r->is_table ? "columns" : "tensors",
		"values", fmt_json_u64(total->values), "marked", fmt_json_u64(total->marked),
		"max_rel_change", total->max_rel, r->is_table ? "columns" : "tensors", cols,
		"left_alone", left);
}

json_t *wm_embed_json(const char *input, const char *output, const wm_opts *o, const fmt_wm_params *prm,
		      const uint8_t hash[32], const wm_result *r)
{
	char hex[65], pay[17];
	fmt_hex(hash, 32, hex);
	snprintf(pay, sizeof pay, "%016llx", (unsigned long long)prm->payload);
	fmt_wm_dist total = { 0 };
	for (size_t i = 0; i < r->n_cols; i++)
		fmt_wm_dist_merge(&total, &r->cols[i]->dist);
	return o->ss ? embed_json_ss(input, output, o, hex, pay, r, &total)
		     : embed_json_qim(input, output, o, prm, hex, pay, r, &total);
}

/* fmtkit-ss's text report. */
static int report_embed_ss(FILE *f, const char *input, const char *output, const wm_opts *o, const char *hex,
			   const char *pay, const wm_result *r, const fmt_wm_dist *total)
{
	double rms_max = rms_rel_max(r);
	embed_head(f, input, output, o, r);
	fprintf(f, " (hash %.12s), payload %s, scheme fmtkit-ss/%d, strength %g\n", hex, pay, o->ss->version,
		o->ss->strength);
	embed_table(f, r, 1);
	fprintf(f, "total: %llu of %llu values marked in %zu tensor%s; RMS change at most %.3e of a tensor's std\n",
		(unsigned long long)total->marked, (unsigned long long)total->values, r->n_cols,
		r->n_cols == 1 ? "" : "s", rms_max);
	left_alone_line(f, r, "F16/BF16: embed into the float32 model, then convert");
	if (total->marked == 0)
		fmt_report_warning(stderr, TOOL, "no value of the selected tensors %s marked", o->dry_run ? "would be" : "was");
	return 0;
}

/* f: standard output, or standard error when OUT's bytes go to standard output. */
int wm_report_embed(FILE *f, const char *input, const char *output, const wm_opts *o, const fmt_wm_params *prm,
		    const uint8_t hash[32], wm_result *r)
{
	if (o->common.json && r->embed_rec.text) { /* made before OUT was put in place */
		fmt_err e;
		fmt_err_clear(&e);
		int w = fmt_json_rec_put(f, &r->embed_rec);
		return w ? (fmt_json_fail(w, &e), wm_fail(o, NULL, &e)) : 0;
	}
	if (o->common.json)
		return embed_json_line(o, f, wm_embed_json(input, output, o, prm, hash, r));
	if (o->common.quiet)
		return 0;
	char hex[65], pay[17];
	fmt_hex(hash, 32, hex);
	snprintf(pay, sizeof pay, "%016llx", (unsigned long long)prm->payload);
	fmt_wm_dist total = { 0 };
	for (size_t i = 0; i < r->n_cols; i++)
		fmt_wm_dist_merge(&total, &r->cols[i]->dist);
	if (o->ss)
		return report_embed_ss(f, input, output, o, hex, pay, r, &total);
	embed_head(f, input, output, o, r);
	fprintf(f, " (hash %.12s), payload %s, density %g, strength %d bits\n", hex, pay, prm->density, prm->strength);
	embed_table(f, r, 0);
	fprintf(f, "total: %llu of %llu values marked in %zu %s%s; max relative change %.3e\n",
		(unsigned long long)total.marked, (unsigned long long)total.values,
		r->n_cols, kind_word(r), r->n_cols == 1 ? "" : "s", total.max_rel);
	left_alone_line(f, r, "F16/BF16, no room for a mark");
	if (total.marked == 0)
		fmt_report_warning(stderr, TOOL, "no value of the selected %ss %s marked", kind_word(r),
				   o->dry_run ? "would be" : "was");
	return 0;
}

static fmt_wm_votes all_votes(const wm_result *r)
{
	fmt_wm_votes v;
	memset(&v, 0, sizeof v);
	for (size_t i = 0; i < r->n_cols; i++)
		fmt_wm_votes_merge(&v, &r->cols[i]->votes);
	return v;
}

/* Columns that carry fmtkit-wm/1 votes (float32/float64; the others are fmtkit-ss's only). */
static size_t qim_columns(const wm_result *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_cols; i++)
		n += r->cols[i]->width > 0;
	return n;
}

static int qim_valid(const wm_result *r)
{
	fmt_wm_votes v = all_votes(r);
	unsigned unknown;
	uint64_t payload = fmt_wm_votes_payload(&v, &unknown);
	return r->has_qim && unknown == 0 && fmt_wm_payload_valid(payload) && fmt_wm_votes_n(&v) > 0;
}

/* fmtkit-ss/2's or fmtkit-ss/1's evidence in a file: the sums of its tensors, the byte scores,
 * the decoded payload. */
typedef struct ss_eval {
	const char *name;
	fmt_ss_sum sum;
	double score[FMT_SS_BYTES][256];
	uint64_t payload;
	unsigned ties;
	int crc_ok, valid;
	int v2;                      /* fmtkit-ss/2 (values: those at the marked runs' places) */
} ss_eval;

static int out_of_memory(const char *path, const wm_opts *o)
{
	fmt_err e;
	fmt_fail(&e, FMT_IO, "out of memory");
	return wm_fail(o, path, &e);
}

static void ss_decide(ss_eval *s)
{
	s->payload = fmt_ss_decode(s->score, &s->ties);
	s->crc_ok = fmt_wm_payload_valid(s->payload);
	s->valid = s->crc_ok && s->ties == 0 && s->sum.values > 0;
}

static void ss1_evaluate(const wm_result *r, ss_eval *s)
{
	s->name = "fmtkit-ss/1";
	for (size_t i = 0; i < r->n_cols; i++)
		if (r->cols[i]->ss)
			fmt_ss_sum_add(&s->sum, r->cols[i]->ss);
	fmt_ss_scores(&s->sum, s->score);
	ss_decide(s);
}

static void ss2_evaluate(const wm_result *r, ss_eval *s)
{
	fmt_ss2_acc all = { 0 };
	s->name = "fmtkit-ss/2";
	s->v2 = 1;
	for (size_t i = 0; i < r->n_cols; i++)
		if (r->cols[i]->ss2 && r->cols[i]->ss2->runs) {
			fmt_ss2_acc_merge(&all, r->cols[i]->ss2);
			s->sum.tensors++;
		}
	s->sum.values = all.values;
	fmt_ss2_scores(&all, s->score);
	ss_decide(s);
}

/* fmtkit-ss/2 unless only fmtkit-ss/1 finds a valid payload (a copy marked with it). */
static ss_eval *ss_evaluate(const wm_result *r)
{
	ss_eval *s = r->has_ss || r->has_ss2 ? calloc(1, sizeof *s) : NULL;
	if (!s)
		return NULL;
	if (r->has_ss2) {
		ss2_evaluate(r, s);
		if (s->valid || !r->has_ss)
			return s;
	}
	ss_eval *old = calloc(1, sizeof *old);
	if (!old) {
		free(s);
		return NULL;
	}
	ss1_evaluate(r, old);
	if (old->valid || !r->has_ss2) {
		free(s);
		return old;
	}
	free(old);
	return s;
}

/* On a model without --scheme: fmtkit-ss unless only fmtkit-wm/1 finds a valid payload. */
static int use_ss(const wm_result *r, const ss_eval *ss)
{
	return ss && (ss->valid || !qim_valid(r));
}

static double runner_up(const double score[256], unsigned best)
{
	double second = -INFINITY;
	for (unsigned a = 0; a < 256; a++)
		if (a != best && score[a] > second)
			second = score[a];
	return second;
}

/* ": buyer hash PREFIX, buyer NAME (payload P, CRC ok)", extract's verdict on a valid payload. */
static void extract_found(const wm_opts *o, const char *prefix, const char *buyer, const char *pay)
{
	printf(": buyer hash %s", prefix);
	if (buyer) {
		printf(", buyer ");
		out_name(buyer);
	} else if (o->registry) {
		printf(", buyer not in the registry");
	}
	printf(" (payload %s, CRC ok)\n", pay);
}

/* Marked values a fmtkit-ss/2 model of 10 M weights gives (1/128 of them, README's table): every
 * copy extracted there; below, extract may miss the CRC bytes where prove still matches. */
#define WM_SS_EXTRACT_VALUES 78000

static int report_extract_ss(const char *path, const wm_opts *o, const ss_eval *ss)
{
	char pay[17], prefix[13];
	snprintf(pay, sizeof pay, "%016llx", (unsigned long long)ss->payload);
	snprintf(prefix, sizeof prefix, "%012llx", (unsigned long long)(ss->payload >> 16));
	char *buyer = NULL;
	/* without a valid payload, the registry is asked too: the 6 hash bytes may have decoded
	 * where the 2 CRC bytes (half the amplitude) did not; the buyer is then named as a lead
	 * for prove, not reported as found */
	if (o->registry && ss->ties == 0) {
		fmt_err e;
		fmt_err_clear(&e);
		if (wm_registry_lookup(o->registry, ss->payload, &buyer, &e) != FMT_OK)
			return wm_fail(o, o->registry, &e);
	}
	double best[FMT_SS_BYTES], second[FMT_SS_BYTES], min = INFINITY, mean = 0, second_max = -INFINITY;
	for (unsigned b = 0; b < FMT_SS_BYTES; b++) {
		unsigned v = (unsigned)(ss->payload >> (56 - 8 * b)) & 0xFF;
		best[b] = ss->score[b][v];
		second[b] = runner_up(ss->score[b], v);
		second_max = fmax(second_max, second[b]);
		mean += best[b] / FMT_SS_BYTES;
		if (best[b] < min)
			min = best[b];
	}
	int status = ss->valid ? 0 : FMT_NEGATIVE;
	if (o->common.json) {
		json_t *bytes = json_array();
		for (unsigned b = 0; b < FMT_SS_BYTES; b++)
			json_array_append_new(bytes, json_pack("{s:i, s:i, s:f, s:f}", "byte", (int)b, "value",
				(int)((ss->payload >> (56 - 8 * b)) & 0xFF), "score", best[b], "runner_up", second[b]));
		json_t *j = json_pack("{s:o, s:s, s:b, s:s, s:b, s:i, s:o, s:i, s:f, s:f, s:o}", "file", jstr(path),
			"scheme", ss->name, "valid", ss->valid, "payload", pay, "crc_ok", ss->crc_ok,
			"tied_bytes", (int)ss->ties, "values", fmt_json_u64(ss->sum.values), "tensors", (int)ss->sum.tensors,
			"score_min", min, "score_mean", mean, "bytes", bytes);
		json_object_set_new(j, "buyer_hash_prefix", ss->valid ? json_string(prefix) : json_null());
		json_object_set_new(j, "buyer", buyer && ss->valid ? jstr(buyer) : json_null());
		json_object_set_new(j, "registry_lead", buyer && !ss->valid ? jstr(buyer) : json_null());
		free(buyer);
		int w = json_out(o, j);
		return w ? w : status;
	}
	out_name(path);
	if (ss->valid) {
		extract_found(o, prefix, buyer, pay);
	} else {
		printf(": no valid watermark (%s: %u of 8 bytes tied, CRC %s)\n", ss->name, ss->ties,
		       ss->crc_ok ? "ok" : "mismatch");
	}
	printf("  %s: %llu values in %zu tensor%s; byte scores min %.1f, mean %.1f (runner-up max %.1f)\n",
	       ss->name, (unsigned long long)ss->sum.values, ss->sum.tensors, ss->sum.tensors == 1 ? "" : "s", min, mean,
	       second_max);
	if (!ss->valid && ss->v2 && ss->sum.values < WM_SS_EXTRACT_VALUES)
		printf("  a model this small may be below extract's reach (%llu values at the mark's places; copies of "
		       "10 M weights, about %d, always decoded in tests): the 2 CRC bytes take half the amplitude; "
		       "prove --buyer ID tests one buyer without them\n", (unsigned long long)ss->sum.values,
		       WM_SS_EXTRACT_VALUES);
	if (!ss->valid && buyer) {
		printf("  the 6 hash bytes decode as %s, buyer ", prefix);
		out_name(buyer);
		printf(" in the registry, not confirmed by the CRC: check with prove --buyer ");
		out_name(buyer);
		printf("\n");
	}
	if (o->common.verbose)
		for (unsigned b = 0; b < FMT_SS_BYTES; b++)
			printf("  byte %u: %02x  score %.2f, runner-up %.2f\n", b,
			       (unsigned)((ss->payload >> (56 - 8 * b)) & 0xFF), best[b], second[b]);
	free(buyer);
	return status;
}

int wm_report_extract(const char *path, const wm_opts *o, const wm_result *r)
{
	ss_eval *ss = ss_evaluate(r);
	if ((r->has_ss || r->has_ss2) && !ss)
		return out_of_memory(path, o);
	if (use_ss(r, ss)) {
		int status = report_extract_ss(path, o, ss);
		free(ss);
		return status;
	}
	free(ss);
	fmt_wm_votes v = all_votes(r);
	unsigned unknown;
	uint64_t payload = fmt_wm_votes_payload(&v, &unknown), n = fmt_wm_votes_n(&v);
	int crc_ok = fmt_wm_payload_valid(payload), valid = unknown == 0 && crc_ok && n > 0;
	char pay[17], prefix[13];
	snprintf(pay, sizeof pay, "%016llx", (unsigned long long)payload);
	snprintf(prefix, sizeof prefix, "%012llx", (unsigned long long)(payload >> 16));
	char *buyer = NULL;
	if (valid && o->registry) {
		fmt_err e;
		fmt_err_clear(&e);
		if (wm_registry_lookup(o->registry, payload, &buyer, &e) != FMT_OK)
			return wm_fail(o, o->registry, &e);
	}
	double agree_min = 1, agree_sum = 0;
	double agreement[FMT_WM_BITS];
	for (int j = 0; j < FMT_WM_BITS; j++) {
		uint64_t ones = v.ones[j], zeros = v.total[j] - ones;
		agreement[j] = v.total[j] ? (double)(ones > zeros ? ones : zeros) / (double)v.total[j] : 0;
		agree_sum += agreement[j];
		if (agreement[j] < agree_min)
			agree_min = agreement[j];
	}
	int status = valid ? 0 : FMT_NEGATIVE;
	if (o->common.json) {
		json_t *bits = json_array();
		for (int j = 0; j < FMT_WM_BITS; j++)
			json_array_append_new(bits, json_pack("{s:i, s:o, s:o, s:f}", "bit", j, "votes",
				fmt_json_u64(v.total[j]), "ones", fmt_json_u64(v.ones[j]), "agreement", agreement[j]));
		json_t *j = json_pack("{s:o, s:s, s:b, s:s, s:b, s:i, s:o, s:f, s:f, s:o}", "file", jstr(path),
			"scheme", "fmtkit-wm/1", "valid", valid, "payload", pay, "crc_ok", crc_ok,
			"unknown_bits", (int)unknown, "votes", fmt_json_u64(n), "agreement_min", agree_min,
			"agreement_mean", agree_sum / FMT_WM_BITS, "bits", bits);
		json_object_set_new(j, "buyer_hash_prefix", valid ? json_string(prefix) : json_null());
		json_object_set_new(j, "buyer", buyer ? jstr(buyer) : json_null());
		free(buyer);
		int w = json_out(o, j);
		return w ? w : status;
	}
	out_name(path);
	if (valid) {
		extract_found(o, prefix, buyer, pay);
	} else {
		printf(": no valid watermark (%u of 64 bits undecided, CRC %s)\n", unknown,
		       crc_ok && unknown == 0 ? "ok" : "mismatch");
	}
	printf("  %llu votes in %zu %s%s; per-bit agreement min %.1f %%, mean %.1f %%\n", (unsigned long long)n,
	       qim_columns(r), kind_word(r), qim_columns(r) == 1 ? "" : "s", 100 * agree_min, 100 * agree_sum / FMT_WM_BITS);
	if (o->common.verbose)
		for (int j = 0; j < FMT_WM_BITS; j++)
			printf("  bit %2d: %d  %llu votes, %.1f %% agree\n", j, fmt_wm_payload_bit(payload, (unsigned)j),
			       (unsigned long long)v.total[j], 100 * agreement[j]);
	free(buyer);
	return status;
}

/* "p = 0.42", or as a power of 10 where p underflows a double */
static void print_p(double ln_p)
{
	if (ln_p > -700)
		printf("p = %.3g", exp(ln_p));
	else
		printf("p = 10^%.1f", log10_p(ln_p));
}

/* Upstream's scheme (specs/ald.md §13): its matches, total, confidence and verdict as upstream
 * computes them, for parity; the verdict and exit status from the bits after the first 256
 * (fmt_wm_alim_decide), since upstream accepts a candidate in almost any clean file. The
 * candidate is printed only when found: it is the first 256 LSBs XOR the key (LSBs all 0: the
 * key itself). */
int wm_report_alimentar(const char *path, const wm_opts *o, const uint8_t raw[32], const wm_result *r)
{
	fmt_wm_alim_col *cols = calloc(r->n_cols ? r->n_cols : 1, sizeof *cols);
	if (!cols)
		return out_of_memory(path, o);
	for (size_t i = 0; i < r->n_cols; i++)
		cols[i] = *r->cols[i]->alim;
	fmt_wm_alim_result a;
	int got = fmt_wm_alim_decide(cols, r->n_cols, raw, &a);
	free(cols);
	char hex[65];
	fmt_hex(a.hash, 32, hex);
	double rate = a.tested ? (double)a.tested_matches / (double)a.tested : 0;
	if (o->common.json) {
		json_t *j = json_pack("{s:o, s:s, s:b, s:o, s:o, s:f, s:b, s:o, s:o, s:o, s:o, s:o, s:f, s:f, s:f}",
			"file", jstr(path), "scheme", "alimentar", "valid", got == 1,
			"matches", fmt_json_u64(a.matches), "total", fmt_json_u64(a.total), "confidence", a.confidence,
			"upstream_accepted", a.accepted, "bits", fmt_json_u64(a.bits), "tested_bits", fmt_json_u64(a.tested),
			"tested_matches", fmt_json_u64(a.tested_matches), "tested_ones", fmt_json_u64(a.tested_ones),
			"tested_pattern_ones", fmt_json_u64(a.pattern_ones), "tested_match_rate", rate,
			"p_value", exp(a.log_p), "log10_p_value", log10_p(a.log_p));
		json_object_set_new(j, "buyer_hash", got == 1 ? json_string(hex) : json_null());
		int w = json_out(o, j);
		return w ? w : got == 1 ? 0 : FMT_NEGATIVE;
	}
	out_name(path);
	if (got < 0) {
		printf(": no alimentar watermark (fewer than 256 float values)\n");
		return FMT_NEGATIVE;
	}
	/* the smallest p these bits allow: as many matches as their ones and the pattern's allow */
	uint64_t most = a.tested_ones < a.pattern_ones ? a.tested_ones : a.pattern_ones;
	if (got == 1)
		printf(": alimentar watermark, buyer hash %s\n", hex);
	else if (fmt_wm_hypergeom_log_sf(a.tested, a.tested_ones, a.pattern_ones, most) >= log(FMT_WM_MATCH_P))
		printf(": no alimentar watermark (too few bits after the first 256, or too few of them 1 or 0, to show "
		       "one at p < 1e%d)\n", (int)lround(log10(FMT_WM_MATCH_P)));
	else
		printf(": no alimentar watermark (the bits after the first 256 do not repeat the candidate's pattern)\n");
	printf("  after the first 256 bits: %llu of %llu match the pattern at their row mod 256 (%.1f %%); ",
	       (unsigned long long)a.tested_matches, (unsigned long long)a.tested, 100 * rate);
	print_p(a.log_p);
	printf(" that as many would by chance (found: p < 1e%d)\n", (int)lround(log10(FMT_WM_MATCH_P)));
	printf("  upstream's figures: confidence %.1f %%, matches %llu, total %llu, %s (matches counts all %llu bits, "
	       "the first 256 by construction; total stops at 1024)\n", 100 * a.confidence, (unsigned long long)a.matches,
	       (unsigned long long)a.total, a.accepted ? "accepted" : "rejected", (unsigned long long)a.bits);
	return got == 1 ? 0 : FMT_NEGATIVE;
}

static fmt_kind file_sha256(const char *path, char out[FMT_SHA256_HEX + 1], fmt_err *e)
{
	fmt_source s;
	fmt_sha256 h;
	uint8_t d[FMT_SHA256_LEN];
	fmt_kind k = fmt_source_open(&s, path, e);
	if (k != FMT_OK)
		return k;
	k = fmt_sha256_init(&h, e);
	if (k == FMT_OK) {
		k = fmt_sha256_source(&h, &s, 0, s.size, e);
		if (k == FMT_OK)
			k = fmt_sha256_final(&h, d, e);
		fmt_sha256_free(&h);
	}
	fmt_source_close(&s);
	if (k == FMT_OK)
		fmt_hex(d, FMT_SHA256_LEN, out);
	return k;
}

/* What a proof is stamped with: the buyer's hash, the file's SHA-256 and the time of analysis. */
typedef struct {
	char key[65], sha[FMT_SHA256_HEX + 1], when[32];
} evidence_stamp;

static fmt_kind stamp_evidence(const char *path, const uint8_t hash[32], evidence_stamp *st, fmt_err *e)
{
	fmt_hex(hash, 32, st->key);
	fmt_kind k = file_sha256(path, st->sha, e);
	wm_utc_now(st->when);
	return k;
}

/* The Ed25519 secret key (minisign's format), decrypted with the passphrase when it has one. */
static fmt_kind load_sign_key(const wm_opts *o, fmt_ms_secret *sec, fmt_err *e)
{
	fmt_pass_opts pass = fmt_cli_pass_opts(o->passphrase_file, o->passphrase_env, &o->common);
	return fmt_ms_secret_load(o->sign_key, &pass, sec, e);
}

/* The evidence: every fact as JSON, then (with a key) an Ed25519 signature over its canonical
 * text (keys sorted, no spaces, reals with 17 significant digits, ASCII only). rec: with --json,
 * the record of it, made before the file is in place (out of memory leaves no file). */
static fmt_kind write_evidence(json_t *ev, const wm_opts *o, fmt_json_rec *rec, fmt_err *e)
{
	if (o->sign_key) {
		fmt_ms_secret sec;
		fmt_kind k = load_sign_key(o, &sec, e);
		if (k != FMT_OK)
			return k;
		char *canon = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17));
		if (!canon) {
			fmt_ms_secret_free(&sec);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
		unsigned char sig[crypto_sign_BYTES];
		crypto_sign_detached(sig, NULL, (const unsigned char *)canon, strlen(canon), sec.sk);
		char id[FMT_MS_KEY_ID_HEX], b64[sodium_base64_ENCODED_LEN(crypto_sign_BYTES, sodium_base64_VARIANT_ORIGINAL)];
		fmt_ms_key_id(sec.keynum, id);
		sodium_bin2base64(b64, sizeof b64, sig, sizeof sig, sodium_base64_VARIANT_ORIGINAL);
		fmt_ms_secret_free(&sec);
		free(canon);
		json_object_set_new(ev, "signature", json_pack("{s:s, s:s, s:s, s:s}", "algorithm", "Ed25519",
			"key_id", id, "signed", "canonical JSON of every other member", "value", b64));
	}
	if (rec) {
		unsigned long since = fmt_json_memory_failures();
		fmt_kind k = fmt_json_rec_make(rec, json_incref(ev), since, e);
		if (k != FMT_OK)
			return k;
	}
	if (!o->evidence)
		return FMT_OK;
	char *text = json_dumps(ev, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17));
	if (!text)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_sink k;
	fmt_kind r = fmt_sink_open(&k, o->evidence, o->force ? FMT_SINK_FORCE : 0, e);
	if (r == FMT_OK) {
		r = fmt_sink_write(&k, text, strlen(text), e);
		if (r == FMT_OK)
			r = fmt_sink_write(&k, "\n", 1, e);
		if (r == FMT_OK)
			r = fmt_sink_commit(&k, e);
		else
			fmt_sink_abort(&k);
	}
	free(text);
	if (r != FMT_OK)
		fmt_err_file(e, o->evidence);
	return r;
}

/* prove's evidence: written (and signed) with -o, printed with --json. *done = 1 when that is all
 * (a failure, or --json): the exit status is returned; else the caller prints the text. */
static int prove_emit(json_t *ev, const wm_opts *o, int match, int *done)
{
	fmt_err e;
	fmt_json_rec rec = { 0 };
	fmt_err_clear(&e);
	*done = 1;
	if (!ev || write_evidence(ev, o, o->common.json ? &rec : NULL, &e) != FMT_OK) {
		json_decref(ev);
		fmt_json_rec_free(&rec);
		if (!ev)
			fmt_fail(&e, FMT_IO, "out of memory");
		return wm_fail(o, NULL, &e);
	}
	json_decref(ev);
	int status = match ? 0 : FMT_NEGATIVE;
	if (o->common.json) { /* made before the evidence file was in place */
		int w = fmt_json_rec_put(wm_records, &rec);
		return w ? (fmt_json_fail(w, &e), wm_fail(o, NULL, &e)) : status;
	}
	*done = 0;
	return status;
}

static void prove_head(const char *path, const wm_opts *o, int match, const char *hex)
{
	out_name(path);
	printf(": %s: buyer ", match ? "match" : "no match");
	out_name(o->buyer);
	printf(" (hash %.12s)\n", hex);
}

static void prove_evidence_note(const wm_opts *o)
{
	if (o->evidence && !o->common.quiet) {
		printf("  evidence%s written to ", o->sign_key ? " (signed)" : "");
		out_name(o->evidence);
		printf("\n");
	}
}

static int report_prove_ss(const char *path, const wm_opts *o, const fmt_wm_params *prm, const uint8_t hash[32],
			   const wm_result *r, const ss_eval *ss)
{
	unsigned rank[FMT_SS_RANKED_BYTES], bytes_alike = 0;
	for (unsigned b = 0; b < FMT_SS_BYTES; b++) {
		unsigned v = (unsigned)(prm->payload >> (56 - 8 * b)) & 0xFF;
		bytes_alike += ((ss->payload >> (56 - 8 * b)) & 0xFF) == v;
		if (b < FMT_SS_RANKED_BYTES)
			rank[b] = fmt_ss_rank(ss->score[b], v);
	}
	double p = fmt_ss_score_p(ss->score, prm->payload);
	if (p < 0) {
		fmt_err e;
		fmt_fail(&e, FMT_IO, "out of memory");
		return wm_fail(o, path, &e);
	}
	double score = 0;
	for (unsigned b = 0; b < FMT_SS_RANKED_BYTES; b++)
		score += ss->score[b][(prm->payload >> (56 - 8 * b)) & 0xFF];
	int match = p < FMT_WM_MATCH_P;
	evidence_stamp st;
	fmt_err e;
	fmt_err_clear(&e);
	if (stamp_evidence(path, hash, &st, &e) != FMT_OK)
		return wm_fail(o, path, &e);
	json_t *cols = json_array(), *ranks = json_array();
	for (size_t i = 0; i < r->n_cols; i++)
		if (r->cols[i]->ss)
			json_array_append_new(cols, json_pack("{s:o, s:o}", "name", jstr(r->cols[i]->name), "values",
				fmt_json_u64(r->cols[i]->nelems)));
	for (unsigned b = 0; b < FMT_SS_RANKED_BYTES; b++)
		json_array_append_new(ranks, json_integer(rank[b]));
	json_t *ev = json_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:s, s:o, s:o, s:f, s:i, s:f, s:f, s:f, s:s, s:b, s:o, s:s}",
		"tool", TOOL, "scheme", ss->name, "file", jstr(path), "format", r->format, "dataset_sha256", st.sha,
		"buyer", jstr(o->buyer), "buyer_hash", st.key, "values", fmt_json_u64(ss->sum.values), "ranks", ranks,
		"score", score,
		"bytes_alike", (int)bytes_alike, "p_value", p, "log10_p_value", log10(p), "confidence", 1 - p,
		"verdict", match ? "match" : "no match", "match", match, "tensors", cols, "analyzed_at", st.when);
	int done, status = prove_emit(ev, o, match, &done);
	if (done)
		return status;
	prove_head(path, o, match, st.key);
	printf("  %s: %llu values in %zu tensor%s; score %.1f, ranks of the buyer's hash bytes",
	       ss->name, (unsigned long long)ss->sum.values, ss->sum.tensors, ss->sum.tensors == 1 ? "" : "s", score);
	for (unsigned b = 0; b < FMT_SS_RANKED_BYTES; b++)
		printf(" %u", rank[b]);
	printf("; %u of 8 payload bytes decode alike:\n  p = %.3e, confidence %.12f\n", bytes_alike, p, 1 - p);
	prove_evidence_note(o);
	return status;
}

int wm_report_prove(const char *path, const wm_opts *o, const fmt_wm_params *prm, const uint8_t hash[32],
		    const wm_result *r)
{
	ss_eval *ss = ss_evaluate(r);
	if ((r->has_ss || r->has_ss2) && !ss)
		return out_of_memory(path, o);
	if (use_ss(r, ss)) {
		int status = report_prove_ss(path, o, prm, hash, r, ss);
		free(ss);
		return status;
	}
	free(ss);
	fmt_wm_votes v = all_votes(r);
	uint64_t n = fmt_wm_votes_n(&v), a = fmt_wm_votes_agree(&v, prm->payload);
	unsigned bits = fmt_wm_votes_bits_agree(&v, prm->payload);
	/* the decision: bits, not votes (fmt/watermark.h says why); the votes' p as the spec has it */
	double ln_p = fmt_wm_binom_log_sf(FMT_WM_BITS, bits), p = exp(ln_p);
	double ln_p_votes = fmt_wm_binom_log_sf(n, a);
	int match = ln_p < log(FMT_WM_MATCH_P);
	evidence_stamp st;
	fmt_err e;
	fmt_err_clear(&e);
	if (stamp_evidence(path, hash, &st, &e) != FMT_OK)
		return wm_fail(o, path, &e);
	json_t *cols = json_array();
	for (size_t i = 0; i < r->n_cols; i++)
		if (r->cols[i]->width > 0)
			json_array_append_new(cols, json_pack("{s:o, s:o, s:o}", "name", jstr(r->cols[i]->name), "votes",
				fmt_json_u64(fmt_wm_votes_n(&r->cols[i]->votes)), "agree",
				fmt_json_u64(fmt_wm_votes_agree(&r->cols[i]->votes, prm->payload))));
	json_t *ev = json_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:s, s:f, s:i, s:o, s:o, s:f, s:f, s:f, s:s, s:b, s:o, s:s}",
		"tool", TOOL, "scheme", "fmtkit-wm/1", "file", jstr(path), "format", r->format, "dataset_sha256", st.sha,
		"buyer", jstr(o->buyer), "buyer_hash", st.key, "density", prm->density, "strength_bits", prm->strength,
		"n", fmt_json_u64(n), "agree", fmt_json_u64(a), "p_value", p, "log10_p_value", log10_p(ln_p),
		"confidence", 1 - p, "verdict", match ? "match" : "no match", "match", match,
		r->is_table ? "columns" : "tensors", cols, "analyzed_at", st.when);
	if (ev) {
		json_object_set_new(ev, "bits_agree", json_integer(bits));
		json_object_set_new(ev, "log10_p_value_votes", json_real(log10_p(ln_p_votes)));
	}
	int done, status = prove_emit(ev, o, match, &done);
	if (done)
		return status;
	prove_head(path, o, match, st.key);
	printf("  n = %llu votes, A = %llu agree (%.2f %%, log10 p = %.1f); %u of 64 payload bits agree:\n"
	       "  p = %.3e, confidence %.12f\n",
	       (unsigned long long)n, (unsigned long long)a, n ? 100.0 * (double)a / (double)n : 0.0,
	       log10_p(ln_p_votes), bits, p, 1 - p);
	prove_evidence_note(o);
	return status;
}

int wm_report_detect(const char *path, const wm_opts *o, const wm_result *r)
{
	double min_ln_p = 0;
	json_t *cols = json_array(), *susp = json_array();
	size_t n_susp = 0;
	for (size_t i = 0; i < r->n_cols; i++) {
		const fmt_wm_lattice *l = &r->cols[i]->lattice;
		double best = 0, ln_p[FMT_WM_DETECT_N];
		int found = 0, best_s = 0;
		for (int s = FMT_WM_DETECT_MIN_S; s <= FMT_WM_DETECT_MAX_S; s++) {
			ln_p[s - FMT_WM_DETECT_MIN_S] = fmt_wm_lattice_log_p(l, s);
			if (ln_p[s - FMT_WM_DETECT_MIN_S] < best) {
				best = ln_p[s - FMT_WM_DETECT_MIN_S];
				best_s = s;
			}
		}
		/* Marks made at s are lattice-aligned at every s' > s too, and a column whose marks lean
		 * to one bit value also shows at s - 1, less strongly: the strength found is the smallest
		 * s whose evidence is within 80 % (in log p) of the strongest. */
		if (best < log(FMT_WM_SUSPICIOUS_P))
			for (int s = FMT_WM_DETECT_MIN_S; s <= FMT_WM_DETECT_MAX_S && !found; s++)
				if (ln_p[s - FMT_WM_DETECT_MIN_S] <= 0.8 * best)
					found = s;
		if (best < min_ln_p)
			min_ln_p = best;
		double frac = l->eligible && found ? (double)l->aligned[found - FMT_WM_DETECT_MIN_S] / (double)l->eligible : 0;
		json_t *c = json_pack("{s:o, s:o, s:b, s:f, s:f}", "name", jstr(r->cols[i]->name), "eligible",
				      fmt_json_u64(l->eligible), "suspicious", found != 0, "log10_p_value", log10_p(best),
				      "p_value", exp(best));
		json_object_set_new(c, "strength_bits", found ? json_integer(found) : json_null());
		json_object_set_new(c, "aligned_fraction", found ? json_real(frac) : json_null());
		json_object_set_new(c, "best_strength_bits", best_s ? json_integer(best_s) : json_null());
		json_array_append_new(cols, c);
		if (found) {
			json_array_append_new(susp, jstr(r->cols[i]->name));
			n_susp++;
		}
	}
	int likely = n_susp > 0;
	double p = exp(min_ln_p);
	if (o->common.json) {
		int w = json_out(o, json_pack("{s:o, s:s, s:b, s:f, s:f, s:f, s:o, s:o}", "file", jstr(path), "verdict",
			likely ? "likely watermarked" : "no watermark detected", "likely_watermarked", likely,
			"confidence", 1 - p, "min_p_value", p, "log10_min_p_value", log10_p(min_ln_p),
			"suspicious", susp, r->is_table ? "columns" : "tensors", cols));
		return w ? w : likely ? 0 : FMT_NEGATIVE;
	}
	json_decref(susp);
	out_name(path);
	if (likely)
		printf(": LIKELY WATERMARKED (confidence %.12f, min p = %.3e, log10 p = %.1f)\n", 1 - p, p, log10_p(min_ln_p));
	else
		printf(": no watermark detected (min p = %.3e over %zu %s%s)\n", p, r->n_cols, kind_word(r),
		       r->n_cols == 1 ? "" : "s");
	for (size_t i = 0; i < json_array_size(cols); i++) {
		json_t *c = json_array_get(cols, i);
		if (!json_is_true(json_object_get(c, "suspicious")) && !o->common.verbose)
			continue;
		printf("  ");
		out_name(r->cols[i]->name);
		if (json_is_true(json_object_get(c, "suspicious")))
			printf(": suspicious at strength %lld bits (%.1f %% lattice-aligned, log10 p = %.1f)\n",
			       (long long)json_integer_value(json_object_get(c, "strength_bits")),
			       100 * json_real_value(json_object_get(c, "aligned_fraction")),
			       json_real_value(json_object_get(c, "log10_p_value")));
		else
			printf(": not suspicious (log10 p = %.2f)\n", json_real_value(json_object_get(c, "log10_p_value")));
	}
	json_decref(cols);
	return likely ? 0 : FMT_NEGATIVE;
}

int wm_report_entropy(const char *path, const wm_opts *o, const wm_result *r)
{
	json_t *cols = json_array();
	if (!o->common.json) {
		out_name(path);
		printf("\n  %-28s %-8s %10s %8s %8s %10s %10s %9s\n", kind_word(r), "type", "n", "shannon", "lsb_ent",
		       "ks_p", "chi2_lsb_p", "lag1_corr");
	}
	for (size_t i = 0; i < r->n_cols; i++) {
		const wm_column *c = r->cols[i];
		fmt_wm_entropy_result er;
		fmt_wm_entropy_finish(c->entropy, &er);
		if (o->common.json) {
			json_array_append_new(cols, json_pack("{s:o, s:s, s:o, s:f, s:f, s:f, s:f, s:f}", "name", jstr(c->name),
				"type", c->dtype, "n", fmt_json_u64(c->entropy->n), "shannon_entropy", er.shannon,
				"lsb_entropy", er.lsb_entropy, "ks_pvalue", er.ks_p, "chi_square_lsb_pvalue",
				er.chi2_lsb_p, "lag1_correlation", er.lag1_corr));
			continue;
		}
		printf("  ");
		out_name(c->name);
		int pad = 28 - (int)strlen(c->name);
		printf("%*s %-8s %10llu %8.4f %8.5f %10.3e %10.3e %9.5f\n", pad > 0 ? pad : 0, "", c->dtype,
		       (unsigned long long)c->entropy->n, er.shannon, er.lsb_entropy, er.ks_p, er.chi2_lsb_p, er.lag1_corr);
	}
	if (o->common.json)
		return json_out(o, json_pack("{s:o, s:o}", "file", jstr(path), r->is_table ? "columns" : "tensors", cols));
	json_decref(cols);
	return 0;
}
