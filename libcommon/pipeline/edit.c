/* fmt-convert --in-place: the metadata options applied to one model file by its driver's
 * edit_meta, which replaces the file atomically. */
#include <string.h>
#include "fmt/out.h"
#include "pipeline_internal.h"

static const fmt_driver *first_editable(void)
{
	for (const fmt_driver *const *d = fmt_drivers(); *d; d++)
		if ((*d)->edit_meta)
			return *d;
	return NULL;
}

/* in's metadata with the user's edits, in edited. */
static fmt_kind edited_meta(const fmt_model *in, const fmt_convert_opts *o, fmt_model *edited, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < in->n_meta && k == FMT_OK; i++)
		k = fmt_model_add_meta(edited, in->meta[i].key, &in->meta[i].val, e);
	return k == FMT_OK ? fmt_meta_apply_user(edited, o, in->driver, e) : k;
}

static void report(const char *path, const fmt_model *edited, int data_moved, const fmt_convert_opts *o)
{
	if (o->json) {
		json_t *j = json_pack("{s:o,s:b,s:s,s:I,s:b}", "file", fmt_json_string(path, strlen(path)), "ok", 1,
				      "edit", "in_place", "metadata_keys", (json_int_t)edited->n_meta, "data_moved",
				      data_moved);
		fmt_json_line(o->out, j);
		json_decref(j);
	} else if (o->verbose) {
		fputs("edited: ", o->err);
		fmt_out_escaped(o->err, path, strlen(path));
		fprintf(o->err, " (%zu metadata keys; tensor data %s)\n", edited->n_meta,
			data_moved ? "copied after the new header" : "at the same offsets");
	}
}

fmt_kind fmt_pipeline_edit(const char *path, const fmt_convert_opts *o, fmt_err *e)
{
	fmt_model in, edited;
	int data_moved = 0;
	fmt_kind k = fmt_model_open(&in, path, NULL, e);
	if (k != FMT_OK)
		return k;
	fmt_model_init(&edited);
	if (!in.driver->edit_meta) {
		const fmt_driver *d = first_editable();
		k = fmt_fail(e, FMT_USAGE, "--in-place edits %s files, not %s (write a new file: fmt-convert IN OUT)",
			     d ? d->title : "no", in.driver->title);
	}
	if (k == FMT_OK)
		k = edited_meta(&in, o, &edited, e);
	if (k == FMT_OK)
		k = in.driver->edit_meta(&in, edited.meta, edited.n_meta, &data_moved, e);
	if (k == FMT_OK)
		report(path, &edited, data_moved, o);
	else
		fmt_err_file(e, path);
	fmt_model_free(&edited);
	fmt_model_free(&in);
	return k;
}
