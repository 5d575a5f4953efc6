/* Trust: the detached FILE.minisig beside a checked file, and how the signatures a check
 * covered are reported. With Ed25519 keys given (-p, -P, --trusted-keys) a file must carry a
 * signature by one of them: FILE.minisig, an embedded signature, or both (each then checked). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fmt/io.h"
#include "fmt/out.h"
#include "verify.h"

fmt_kind verify_detached(const char *path, const fmt_keyset *keys, verify_sigs *v, fmt_err *e)
{
	size_t n = strlen(path) + sizeof ".minisig";
	char *sig_path = malloc(n), *text = NULL;
	struct stat st;
	size_t len;
	if (!sig_path)
		return fmt_fail(e, FMT_IO, "out of memory");
	snprintf(sig_path, n, "%s.minisig", path);
	fmt_kind k = FMT_OK;
	if (stat(sig_path, &st) != 0) {
		if (errno != ENOENT)
			k = fmt_fail(e, FMT_IO, "cannot read %s: %s", sig_path, strerror(errno));
		free(sig_path);
		return k;
	}
	if (!keys->n_trusted) {
		v->detached_unchecked = 1;
		free(sig_path);
		return FMT_OK;
	}
	k = fmt_read_small(sig_path, 0, FMT_MS_FILE_MAX, &text, &len, e);
	if (k != FMT_OK) {
		e->file[0] = '\0';   /* the report names the checked file, the message its signature */
		fmt_err_prefix(e, "%s", sig_path);
	}
	if (k == FMT_OK)
		k = fmt_ms_check_detached(text, len, sig_path, path, keys->trusted, keys->n_trusted, v->detached_id, e);
	if (k == FMT_OK)
		v->detached = 1;
	free(text);
	free(sig_path);
	return k;
}

fmt_kind verify_set_detached(const fmt_model *m, const char *path, const fmt_keyset *keys, verify_sigs *v,
			     fmt_err *e)
{
	if (!v->detached || (v->signer.kind && strcmp(v->signer.kind, "ed25519") == 0))
		return FMT_OK;
	for (size_t i = 0; i < m->n_sources; i++) {
		const char *file = m->sources[i].path;
		if (strcmp(file, path) == 0)
			continue;
		verify_sigs shard;
		memset(&shard, 0, sizeof shard);
		fmt_kind k = verify_detached(file, keys, &shard, e);
		if (k != FMT_OK)
			fmt_err_prefix(e, "%s", file);
		if (k == FMT_OK && !shard.detached)
			k = fmt_fail(e, FMT_SIGNATURE, "%s has no .minisig: the signature of %s does not cover the "
				     "other files of the set (sign each: fmt-sign sign -s SECKEY FILE...)", file, path);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

/* An embedded signature the driver checked, of either kind (Ed25519 or HMAC-SHA256). */
static int reported(const fmt_signer *s)
{
	return s->kind != NULL;
}

int sigs_any(const verify_sigs *v)
{
	return v->detached || v->detached_unchecked || reported(&v->signer) || v->signer.unchecked;
}

static json_t *unchecked_json(const char *kind)
{
	return json_pack("{s:s,s:b}", "kind", kind, "checked", 0);
}

json_t *sigs_json(const verify_sigs *v)
{
	json_t *a = json_array();
	if (v->detached)
		json_array_append_new(a, json_pack("{s:s,s:s,s:b}", "kind", "minisig", "key_id", v->detached_id,
						   "trusted", 1));
	if (v->detached_unchecked)
		json_array_append_new(a, unchecked_json("minisig"));
	if (reported(&v->signer))
		json_array_append_new(a, json_pack("{s:s,s:s,s:b}", "kind", v->signer.kind, "key_id",
						   v->signer.key_id, "trusted", 1));
	if (v->signer.unchecked)
		json_array_append_new(a, unchecked_json(v->signer.unchecked));
	return a;
}

void sigs_text(const verify_sigs *v, FILE *out)
{
	if (v->detached)
		fprintf(out, ", .minisig by trusted key %s", v->detached_id);
	char by[48];
	if (reported(&v->signer))
		fprintf(out, ", %s signature by %s", v->signer.kind, fmt_signer_name(v->signer.key_id, by, sizeof by));
	if (v->detached_unchecked || v->signer.unchecked)
		fprintf(out, ", signed (not checked: no key given)");
}
