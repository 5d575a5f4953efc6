/* Metadata edits of one GGUF file (the driver's edit_meta, fmt-convert --in-place). The file
 * is replaced atomically by a new one (a temporary file beside it, fsync'd and renamed): the
 * new key-value pairs, then the tensor infos and the tensor data exactly as they were. When
 * the new header rounds up to the old data offset, the data keeps its offsets: the whole file
 * is copied with copy_file_range (on file systems that share blocks, such as btrfs and XFS,
 * nothing but the header is written) and the header is patched; otherwise the header is
 * written and the data region copied after it, its relative offsets unchanged. A new
 * alignment re-lays the tensors: then the writer rewrites the file. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fmt/checked.h"
#include "fmt/strbuf.h"
#include "gguf_internal.h"

/* The header of the edited file in mem: magic, version and tensor count as they were, the new
 * key count and pairs, the old tensor infos; padded to the alignment. */
static fmt_kind build_header(const fmt_model *m, const fmt_gguf_info *st, const fmt_meta *meta, size_t n_meta,
			     fmt_sb *mem, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	uint8_t head[24];
	uint64_t infos_len = st->infos_end - st->infos_start;
	fmt_kind k = fmt_source_read(s, 0, head, 16, e);
	if (k != FMT_OK)
		return k;
	fmt_wr_u64(head + 16, n_meta);
	fmt_sb_put(mem, (const char *)head, sizeof head);
	if ((k = fmt_gguf_put_meta(mem, meta, n_meta, st->alignment, e)) != FMT_OK)
		return k;
	if (infos_len > SIZE_MAX - mem->len)
		return fmt_fail(e, FMT_IO, "out of memory");
	char *at = fmt_sb_reserve(mem, (size_t)infos_len);
	if (!at || (k = fmt_source_read(s, st->infos_start, at, (size_t)infos_len, e)) != FMT_OK)
		return at ? k : fmt_fail(e, FMT_IO, "out of memory");
	fmt_sb_commit(mem, (size_t)infos_len);
	uint64_t padded;
	if (fmt_align_up_u64(mem->len, st->alignment, &padded))
		return fmt_fail(e, FMT_INTERNAL, "header size overflows");
	while (mem->len < padded && !mem->oom)
		fmt_sb_put(mem, "", 1);
	return mem->oom ? fmt_fail(e, FMT_IO, "out of memory") : FMT_OK;
}

/* The new file in k: the header in mem, then the data as it was (patched in place when it
 * keeps its offset, appended otherwise). */
static fmt_kind write_edited(const fmt_model *m, const fmt_gguf_info *st, const fmt_sb *mem, fmt_sink *k,
			     int *data_moved, fmt_err *e)
{
	const fmt_source *s = &m->sources[0];
	/* a file without tensors may end before its last padding */
	uint64_t data_bytes = s->size > st->data_start ? s->size - st->data_start : 0, total;
	if (fmt_add_u64(mem->len, data_bytes, &total))
		return fmt_fail(e, FMT_INTERNAL, "file size overflows");
	fmt_kind r = fmt_sink_check_room(k, total, e);
	*data_moved = mem->len != st->data_start || s->size < st->data_start;
	if (r == FMT_OK && !*data_moved) {
		r = fmt_sink_copy_range(k, s->fd, 0, s->size, e);
		if (r == FMT_OK)
			r = fmt_sink_pwrite(k, 0, mem->p, mem->len, e);
		return r;
	}
	if (r == FMT_OK)
		r = fmt_sink_write(k, mem->p, mem->len, e);
	if (r == FMT_OK)
		r = fmt_sink_copy_range(k, s->fd, st->data_start, data_bytes, e);
	return r;
}

fmt_kind fmt_gguf_edit_meta(const fmt_model *m, const fmt_meta *meta, size_t n_meta, int *data_moved, fmt_err *e)
{
	const fmt_gguf_info *st = fmt_gguf_info_of(m);
	uint32_t align;
	if (!st || st->n_shards != 1 || m->n_sources != 1 || m->sources[0].fd < 0 || m->sources[0].sequential)
		return fmt_fail(e, FMT_UNSUPPORTED, "in-place edits take one GGUF file, not a split set or a stream");
	fmt_kind r = fmt_gguf_check_meta(meta, n_meta, &align, e);
	if (r != FMT_OK)
		return r;
	/* through a symbolic link, the file it names is replaced, not the link; it keeps its mode */
	fmt_sink k;
	if ((r = fmt_sink_open_in_place(&k, m->path, e)) != FMT_OK)
		return r;
	if (align != st->alignment) { /* the tensors are laid out anew */
		*data_moved = 1;
		r = fmt_gguf_write_file(m, meta, n_meta, m->tensors, m->n_tensors, align, &k, e);
	} else {
		fmt_sb mem = { 0 };
		r = build_header(m, st, meta, n_meta, &mem, e);
		if (r == FMT_OK)
			r = write_edited(m, st, &mem, &k, data_moved, e);
		free(mem.p);
	}
	if (r == FMT_OK)
		r = fmt_sink_commit(&k, e);
	else
		fmt_sink_abort(&k);
	return r;
}
