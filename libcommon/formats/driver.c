/* What the drivers share, below them: a file opened with a driver already chosen, verify and
 * the other questions asked of the driver an open model or table has, and the signature block
 * check. Nothing here chooses a driver (the registry does, libcommon/registry/), so that a
 * driver may call all of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/minisign.h"
#include "fmt/registry.h"
#include "fmt/table.h"

const fmt_driver *fmt_driver_file_writer(const fmt_driver *d)
{
	return d && d->file_driver ? d->file_driver : d;
}

const fmt_driver *fmt_driver_set_writer(const fmt_driver *d)
{
	d = fmt_driver_file_writer(d);
	return d && d->plan_shards && d->write_sharded ? d : NULL;
}

int fmt_driver_can(const fmt_driver *d, unsigned caps)
{
	return (d->caps & caps) == caps;
}

int fmt_driver_writes(const fmt_driver *d)
{
	return d->write || fmt_driver_can(d, FMT_CAP_NETWORK);
}

int fmt_driver_holds_dtype(const fmt_driver *d, fmt_dtype t)
{
	return d->holds_dtype ? d->holds_dtype(t) : fmt_dtype_get(t)->in_safetensors;
}

/* ---- opening with a known driver ---- */

fmt_kind fmt_driver_take_source(const fmt_driver *d, fmt_source *src, int random_access, fmt_err *e)
{
	if (!src->sequential || ((d->streams || d->text_max) && !random_access))
		return FMT_OK;
	fmt_kind k = d->check_head ? d->check_head(src, e) : FMT_OK;
	return k == FMT_OK ? fmt_source_make_whole(src, e) : k;
}

fmt_kind fmt_model_open_source_with(fmt_model *m, fmt_source *src, const char *path, const fmt_driver *d,
				    fmt_err *e)
{
	m->path = strdup(path);
	fmt_kind k = m->path ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK && (k = fmt_driver_take_source(d, src, 0, e)) != FMT_OK)
		fmt_err_file(e, path);
	if (k == FMT_OK)
		k = fmt_model_add_source(m, src, NULL, e);
	if (k != FMT_OK) {
		fmt_source_close(src);
		fmt_model_free(m);
		return k;
	}
	m->driver = d;
	m->close = d->close;
	k = d->open(m, e);
	if (k != FMT_OK) {
		fmt_err_file(e, path);
		fmt_model_free(m);
	}
	return k;
}

fmt_kind fmt_model_open_with(fmt_model *m, const char *path, const fmt_driver *d, fmt_err *e)
{
	fmt_source src;
	fmt_model_init(m);
	fmt_kind k = fmt_source_open_sequential(&src, path, e);
	if (k == FMT_OK && (k = fmt_driver_take_source(d, &src, 1, e)) != FMT_OK) {
		fmt_err_file(e, path);
		fmt_source_close(&src);
	}
	return k == FMT_OK ? fmt_model_open_source_with(m, &src, path, d, e) : k;
}

fmt_kind fmt_table_open_source_with(fmt_table *t, fmt_source *src, const char *path, const fmt_table_driver *d,
				    fmt_err *e)
{
	t->source = *src;
	t->has_source = 1;
	t->path = strdup(path);
	if (!t->path) {
		fmt_table_free(t);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	t->driver = t->reader = d;
	fmt_kind k = d->open(t, e);
	if (k == FMT_OK)
		k = fmt_schema_check(&t->schema, e);
	if (k != FMT_OK) {
		fmt_err_file(e, path);
		fmt_table_free(t);
	}
	return k;
}

fmt_kind fmt_table_open_with(fmt_table *t, const char *path, const fmt_table_driver *d, fmt_err *e)
{
	fmt_source src;
	fmt_table_init(t);
	fmt_kind k = fmt_source_open(&src, path, e);
	return k == FMT_OK ? fmt_table_open_source_with(t, &src, path, d, e) : k;
}

/* ---- the driver of an open model or table ---- */

fmt_kind fmt_model_verify(fmt_model *m, const fmt_verify_opts *o, fmt_err *e)
{
	static const fmt_verify_opts none = { 0 };
	if (!o)
		o = &none;
	int hmac_unusable = o->keys.hmac && !fmt_driver_can(m->driver, FMT_CAP_SIGNATURES);
	int ed_unusable = o->keys.n_trusted && !fmt_driver_can(m->driver, FMT_CAP_ED25519);
	if (hmac_unusable || (ed_unusable && !o->signed_elsewhere)) {
		if (hmac_unusable)
			return fmt_fail_file(e, FMT_SIGNATURE, m->path, "a key was given but %s files carry no "
					     "signature", m->driver->name);
		return fmt_fail_file(e, FMT_SIGNATURE, m->path, "not signed: %s files carry no embedded Ed25519 "
				     "signature and there is no FILE.minisig beside it", m->driver->name);
	}
	fmt_verify_opts plain;
	if (ed_unusable) { /* checked by FILE.minisig: the driver checks the rest */
		plain = (fmt_verify_opts){ .threads = o->threads, .reads_follow = o->reads_follow,
					   .signer = o->signer };
		o = &plain;
	}
	if (!m->driver->verify)
		return FMT_OK;
	fmt_kind k = m->driver->verify(m, o, e);
	if (k != FMT_OK)
		fmt_err_file(e, m->path);
	return k;
}

fmt_kind fmt_table_verify(fmt_table *t, const struct fmt_verify_opts *o, fmt_err *e)
{
	fmt_verify_opts plain;
	if (o && !fmt_keyset_empty(&o->keys) && !(t->driver->caps & FMT_CAP_ED25519)) {
		if (!o->signed_elsewhere || o->keys.hmac)
			return fmt_fail_file(e, FMT_SIGNATURE, t->path,
					     o->keys.hmac ? "a key was given but %s files carry no signature"
					     : "not signed: %s files carry no embedded Ed25519 signature and there is no "
					       "FILE.minisig beside it", t->driver->name);
		plain = (fmt_verify_opts){ .threads = o->threads, .reads_follow = o->reads_follow };
		o = &plain;
	}
	fmt_kind k = o ? fmt_table_names_utf8(t, e) : FMT_OK;
	if (k == FMT_OK && t->driver->verify)
		k = t->driver->verify(t, o, e);
	if (k != FMT_OK)
		fmt_err_file(e, t->path);
	return k;
}

fmt_kind fmt_table_verify_as_read(fmt_table *t, fmt_err *e)
{
	if (!t->driver->verify_as_read)
		return fmt_fail(e, FMT_UNSUPPORTED, "%s files are verified before they are read", t->driver->name);
	return t->driver->verify_as_read(t, e);
}

fmt_kind fmt_model_verify_as_read(fmt_model *m, fmt_err *e)
{
	if (!m->driver || !m->driver->verify_as_read)
		return fmt_fail(e, FMT_UNSUPPORTED, "%s files are verified before they are read",
				m->driver ? m->driver->name : "these");
	return m->driver->verify_as_read(m, e);
}

int fmt_model_sequential(const fmt_model *m)
{
	for (size_t i = 0; i < m->n_sources; i++)
		if (m->sources[i].sequential)
			return 1;
	return 0;
}

const char *fmt_model_signature(const fmt_model *m)
{
	return m->driver && m->driver->signature ? m->driver->signature(m) : NULL;
}

fmt_kind fmt_verify_signature_block(const fmt_verify_opts *o, int is_signed, const uint8_t *pk,
				    const void *msg, size_t len, const uint8_t *sig, fmt_err *e)
{
	char id[FMT_MS_KEY_ID_HEX];
	if (!o->keys.n_trusted) {
		if (is_signed && o->signer)
			o->signer->unchecked = "ed25519";
		return FMT_OK;
	}
	if (!is_signed)
		return o->signed_elsewhere ? FMT_OK
					   : fmt_fail(e, FMT_SIGNATURE, "not signed: no signature block (flag bit 1) "
						      "and no FILE.minisig");
	fmt_kind k = fmt_trust_check_embedded(o->keys.trusted, o->keys.n_trusted, pk, msg, len, sig, id, e);
	if (k == FMT_OK && o->signer) {
		o->signer->kind = "ed25519";
		snprintf(o->signer->key_id, sizeof o->signer->key_id, "%s", id);
	}
	return k;
}
