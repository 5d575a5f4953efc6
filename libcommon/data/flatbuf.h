/* FlatBuffers, the part Arrow IPC needs: a bounds-checked reader of tables, vectors, strings
 * and unions, and a builder that lays buffers out back to front exactly as the reference
 * builders do (alignment, vtable sharing, root alignment), so that Arrow messages can be
 * reproduced byte for byte. Internal to libcommon/data. */
#ifndef FMT_DATA_FLATBUF_H
#define FMT_DATA_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

/* ---- reader ---- */

/* A table inside buf[0..len): every accessor checks against len and the table's own size. */
typedef struct fb_table {
	const uint8_t *buf;
	size_t len;
	size_t pos;        /* table start (its soffset) */
	size_t vt;         /* vtable start */
	uint16_t vt_len;   /* vtable bytes */
	uint16_t size;     /* table inline bytes */
} fb_table;

/* The root table of a buffer; 0 on success, -1 when any offset is out of range. */
int fb_root(const uint8_t *buf, size_t len, fb_table *out);

/* Where field id is stored (absolute position in buf), 0 when absent. -1 when the field's
 * width does not fit the table. */
int fb_field_pos(const fb_table *t, unsigned id, size_t width, size_t *pos);

/* Scalars: the default when absent; -1 when malformed. */
int fb_u8(const fb_table *t, unsigned id, uint8_t def, uint8_t *out);
int fb_i16(const fb_table *t, unsigned id, int16_t def, int16_t *out);
int fb_i32(const fb_table *t, unsigned id, int32_t def, int32_t *out);
int fb_i64(const fb_table *t, unsigned id, int64_t def, int64_t *out);

/* Offset fields. Each returns 1 when present, 0 when absent, -1 when malformed. */
int fb_table_field(const fb_table *t, unsigned id, fb_table *out);
/* A vector of elem_size-byte elements: *at = first element, *n = count (fits in buf). */
int fb_vector(const fb_table *t, unsigned id, size_t elem_size, size_t *at, uint32_t *n);
/* A string: pointer into buf and its length (not NUL-terminated in this API). */
int fb_string(const fb_table *t, unsigned id, const char **s, uint32_t *n);
/* Element i of a vector of tables starting at at. */
int fb_vector_table(const fb_table *t, size_t at, uint32_t i, fb_table *out);

/* ---- builder ---- */

#define FB_MAX_FIELDS 16

typedef struct fb_builder {
	uint8_t *buf;       /* data occupies buf[cap - used, cap) */
	size_t cap, used;
	size_t min_align;
	struct { uint16_t voff; uint32_t rev; } fields[FB_MAX_FIELDS];
	size_t n_fields;
	uint32_t table_start;
	uint32_t *vtables;  /* rev positions of every vtable written (for sharing) */
	size_t n_vtables, cap_vtables;
	int oom;
} fb_builder;

/* An object's position counted from the end of the buffer, as the builder returns it. */
typedef uint32_t fb_ref;

void fb_builder_init(fb_builder *b);
void fb_builder_free(fb_builder *b);
/* Clear for the next buffer, keeping the memory. */
void fb_builder_reset(fb_builder *b);

fb_ref fb_create_string(fb_builder *b, const char *s, size_t n);
/* A vector of n structs of elem_size bytes, given already encoded (little-endian) in data. */
fb_ref fb_create_struct_vector(fb_builder *b, const void *data, uint32_t n, size_t elem_size,
			       size_t align);
fb_ref fb_create_ref_vector(fb_builder *b, const fb_ref *refs, uint32_t n);

void fb_start_table(fb_builder *b);
/* Slots are written only when the value differs from the default (as the reference does). */
void fb_slot_u8(fb_builder *b, unsigned id, uint8_t v, uint8_t def);
void fb_slot_i16(fb_builder *b, unsigned id, int16_t v, int16_t def);
void fb_slot_i32(fb_builder *b, unsigned id, int32_t v, int32_t def);
void fb_slot_i64(fb_builder *b, unsigned id, int64_t v, int64_t def);
void fb_slot_ref(fb_builder *b, unsigned id, fb_ref r);
fb_ref fb_end_table(fb_builder *b);

/* Finish with root; data and len give the finished buffer (owned by the builder). -1 on OOM. */
int fb_finish(fb_builder *b, fb_ref root, const uint8_t **data, size_t *len);

#endif
