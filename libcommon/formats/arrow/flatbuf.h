/* FlatBuffers, the part Arrow IPC needs: a bounds-checked reader of tables, vectors, strings
 * and unions, and a builder that lays buffers out back to front exactly as the reference
 * builders do (alignment, vtable sharing, root alignment), so that Arrow messages can be
 * reproduced byte for byte. Internal to libcommon/formats/arrow. */
#ifndef FMT_ARROW_FLATBUF_H
#define FMT_ARROW_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

/* ---- reader ---- */

/* A table inside buf[0..len): every accessor checks against len and the table's own size. */
typedef struct fmt_fb_table {
	const uint8_t *buf;
	size_t len;
	size_t pos;        /* table start (its soffset) */
	size_t vt;         /* vtable start */
	uint16_t vt_len;   /* vtable bytes */
	uint16_t size;     /* table inline bytes */
} fmt_fb_table;

/* The root table of a buffer; 0 on success, -1 when any offset is out of range. */
int fmt_fb_root(const uint8_t *buf, size_t len, fmt_fb_table *out);

/* Where field id is stored (absolute position in buf), 0 when absent. -1 when the field's
 * width does not fit the table. */
int fmt_fb_field_pos(const fmt_fb_table *t, unsigned id, size_t width, size_t *pos);

/* Scalars: the default when absent; -1 when malformed. */
int fmt_fb_u8(const fmt_fb_table *t, unsigned id, uint8_t def, uint8_t *out);
int fmt_fb_i16(const fmt_fb_table *t, unsigned id, int16_t def, int16_t *out);
int fmt_fb_i32(const fmt_fb_table *t, unsigned id, int32_t def, int32_t *out);
int fmt_fb_i64(const fmt_fb_table *t, unsigned id, int64_t def, int64_t *out);

/* Offset fields. Each returns 1 when present, 0 when absent, -1 when malformed. */
int fmt_fb_table_field(const fmt_fb_table *t, unsigned id, fmt_fb_table *out);
/* A vector of elem_size-byte elements: *at = first element, *n = count (fits in buf). */
int fmt_fb_vector(const fmt_fb_table *t, unsigned id, size_t elem_size, size_t *at, uint32_t *n);
/* A string: pointer into buf and its length (not NUL-terminated in this API). */
int fmt_fb_string(const fmt_fb_table *t, unsigned id, const char **s, uint32_t *n);
/* Element i of a vector of tables starting at at. */
int fmt_fb_vector_table(const fmt_fb_table *t, size_t at, uint32_t i, fmt_fb_table *out);

/* ---- builder ---- */

#define FB_MAX_FIELDS 16

typedef struct fmt_fb_builder {
	uint8_t *buf;       /* data occupies buf[cap - used, cap) */
	size_t cap, used;
	size_t min_align;
	struct { uint16_t voff; uint32_t rev; } fields[FB_MAX_FIELDS];
	size_t n_fields;
	uint32_t table_start;
	uint32_t *vtables;  /* rev positions of every vtable written (for sharing) */
	size_t n_vtables, cap_vtables;
	int oom;
} fmt_fb_builder;

/* An object's position counted from the end of the buffer, as the builder returns it. */
typedef uint32_t fmt_fb_ref;

void fmt_fb_builder_init(fmt_fb_builder *b);
void fmt_fb_builder_free(fmt_fb_builder *b);
/* Clear for the next buffer, keeping the memory. */
void fmt_fb_builder_reset(fmt_fb_builder *b);

fmt_fb_ref fmt_fb_create_string(fmt_fb_builder *b, const char *s, size_t n);
/* A vector of n structs of elem_size bytes, given already encoded (little-endian) in data. */
fmt_fb_ref fmt_fb_create_struct_vector(fmt_fb_builder *b, const void *data, uint32_t n, size_t elem_size,
			       size_t align);
fmt_fb_ref fmt_fb_create_ref_vector(fmt_fb_builder *b, const fmt_fb_ref *refs, uint32_t n);

void fmt_fb_start_table(fmt_fb_builder *b);
/* Slots are written only when the value differs from the default (as the reference does). */
void fmt_fb_slot_u8(fmt_fb_builder *b, unsigned id, uint8_t v, uint8_t def);
void fmt_fb_slot_i16(fmt_fb_builder *b, unsigned id, int16_t v, int16_t def);
void fmt_fb_slot_i32(fmt_fb_builder *b, unsigned id, int32_t v, int32_t def);
void fmt_fb_slot_i64(fmt_fb_builder *b, unsigned id, int64_t v, int64_t def);
void fmt_fb_slot_ref(fmt_fb_builder *b, unsigned id, fmt_fb_ref r);
fmt_fb_ref fmt_fb_end_table(fmt_fb_builder *b);

/* Finish with root; data and len give the finished buffer (owned by the builder). -1 on OOM. */
int fmt_fb_finish(fmt_fb_builder *b, fmt_fb_ref root, const uint8_t **data, size_t *len);

#endif
