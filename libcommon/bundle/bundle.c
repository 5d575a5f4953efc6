/* Tar bundles (fmt/bundle.h): pack a model set with a manifest of SHA-256 digests, verify one
 * while streaming through it, unpack one so that nothing is left behind unless every member
 * verified. libarchive does the tar and zstd work; this file decides what is allowed.
 *
 * Unpack extracts every member into a private staging directory (fmt/stagedir.h) made beside
 * the destination, checks it there (digests; with a key, the signature of the set and that it
 * covers every member), and only then moves the members into place together. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/bundle.h"
#include "fmt/checked.h"
#include "fmt/io.h"
#include "fmt/lazylib.h"
#include "fmt/minisign.h"
#include "fmt/out.h"
#include "fmt/meter.h"
#include "fmt/registry.h"
#include "fmt/stagedir.h"
#include "fmt/strbuf.h"
#include "fmt/version.h"
#include "fmt/tree_budget.h"

#define NM "'%.200s'"
#define READ_BLOCK ((size_t)1 << 20)
#define PROBE_BLOCK ((size_t)64 << 10)

/* libarchive is loaded when a bundle is first read or written (fmt/lazylib.h), not linked: the
 * functions are called through these slots, AR(name). */
#define ARCHIVE_FUNCTIONS(X) \
	X(archive_entry_filetype) X(archive_entry_free) X(archive_entry_hardlink) \
	X(archive_entry_new) X(archive_entry_pathname) X(archive_entry_set_filetype) \
	X(archive_entry_set_gid) X(archive_entry_set_mtime) X(archive_entry_set_pathname) \
	X(archive_entry_set_perm) X(archive_entry_set_size) X(archive_entry_set_uid) \
	X(archive_entry_size) X(archive_entry_size_is_set) X(archive_entry_sparse_count) \
	X(archive_errno) X(archive_error_string) X(archive_filter_bytes) X(archive_filter_code) X(archive_read_data) \
	X(archive_read_data_block) X(archive_read_free) X(archive_read_new) \
	X(archive_read_next_header) X(archive_read_open) X(archive_read_support_filter_zstd) \
	X(archive_read_support_format_tar) X(archive_set_error) X(archive_write_add_filter_zstd) \
	X(archive_write_close) X(archive_write_data) X(archive_write_free) \
	X(archive_write_header) X(archive_write_new) X(archive_write_open) \
	X(archive_write_set_bytes_in_last_block) X(archive_write_set_format_pax_restricted)
static const char *const archive_names[] = { ARCHIVE_FUNCTIONS(FMT_LAZY_NAME) };
static FMT_LAZY_TABLE(ARCHIVE_FUNCTIONS) archive_fns;
FMT_LAZY_CHECK(archive_fns);
static fmt_lazylib archive_lib = { "libarchive.so.13", archive_names, archive_fns.slot,
				   sizeof archive_names / sizeof archive_names[0], 0 };
#define AR(f) archive_fns.fn.f

void fmt_bundle_info_free(fmt_bundle_info *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n_members; i++)
		free(b->members[i].name);
	free(b->members);
	free(b->format);
	free(b->fmtkit);
	free(b->sigs);
	memset(b, 0, sizeof *b);
}

static int cmp_member(const void *a, const void *b)
{
	return strcmp(((const fmt_bundle_member *)a)->name, ((const fmt_bundle_member *)b)->name);
}

static fmt_bundle_member *find_member(const fmt_bundle_info *b, const char *name)
{
	fmt_bundle_member key = { .name = (char *)name };
	return bsearch(&key, b->members, b->n_members, sizeof key, cmp_member);
}

/* Why name cannot be a member (members are plain file names in one directory), or NULL. */
static const char *unsafe_member(const char *name)
{
	if (!name[0])
		return "has an empty name";
	if (name[0] == '/')
		return "is an absolute path";
	for (const char *p = name;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return "has a '..' component";
		if (!slash)
			break;
		p = slash + 1;
	}
	if (strchr(name, '/'))
		return "is a path with a directory (members are plain file names)";
	if (strcmp(name, ".") == 0)
		return "is '.'";
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p == 0x7F || *p == '\\' || (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F))
			return "contains a control character or a backslash";
	if (!fmt_utf8_valid(name, strlen(name)))
		return "is not valid UTF-8";
	return NULL;
}

#define SIG_SUFFIX ".minisig"

/* A member named X.minisig is the detached signature of member X. */
static int is_sig_name(const char *name)
{
	return strlen(name) > strlen(SIG_SUFFIX) && fmt_ends_with(name, SIG_SUFFIX);
}

/* b->sigs: one unchecked entry per X.minisig member, X required among the members. */
static fmt_kind find_sigs(fmt_bundle_info *b, fmt_err *e)
{
	size_t n = 0;
	for (size_t i = 0; i < b->n_members; i++)
		n += (size_t)is_sig_name(b->members[i].name);
	free(b->sigs);
	b->n_sigs = 0;
	/* one more for the embedded signature a keyed check may add */
	if (!(b->sigs = calloc(n + 1, sizeof *b->sigs)))
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < b->n_members; i++) {
		const char *name = b->members[i].name;
		if (!is_sig_name(name))
			continue;
		char *signed_name = strndup(name, strlen(name) - strlen(SIG_SUFFIX));
		if (!signed_name)
			return fmt_fail(e, FMT_IO, "out of memory");
		fmt_bundle_member *file = find_member(b, signed_name);
		fmt_kind k = file ? FMT_OK
				  : fmt_fail(e, FMT_INVALID_FORMAT, "member " NM " is the signature of " NM ", which is "
					     "not in the bundle", name, signed_name);
		free(signed_name);
		if (k != FMT_OK)
			return k;
		b->sigs[b->n_sigs++] = (fmt_bundle_sig){ .file = (size_t)(file - b->members), .sig = i, .kind = "minisig" };
	}
	return FMT_OK;
}

static int is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* ---- manifest ---- */

static fmt_kind parse_entry(const char *name, json_t *v, fmt_bundle_member *mb, fmt_err *e)
{
	const char *why = strcmp(name, FMT_BUNDLE_MANIFEST) == 0 ? "names the manifest itself"
								  : unsafe_member(name);
	if (why)
		return fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json: file " NM " %s", name, why);
	json_t *sha = json_object_get(v, "sha256"), *size = json_object_get(v, "size");
	if (!json_is_string(sha) || json_string_length(sha) != FMT_SHA256_HEX ||
	    !is_lower_hex(json_string_value(sha), FMT_SHA256_HEX))
		return fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json: file " NM ": sha256 is not 64 lowercase hex digits",
				name);
	if (!json_is_integer(size) || json_integer_value(size) < 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json: file " NM ": size is not a non-negative integer",
				name);
	if (!(mb->name = strdup(name)))
		return fmt_fail(e, FMT_IO, "out of memory");
	memcpy(mb->sha256, json_string_value(sha), FMT_SHA256_HEX + 1);
	mb->size = (uint64_t)json_integer_value(size);
	return FMT_OK;
}

static fmt_kind parse_manifest_json(json_t *root, fmt_bundle_info *b, fmt_err *e)
{
	json_t *files = json_object_get(root, "files"), *format = json_object_get(root, "format");
	if (!json_is_object(files))
		return fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json: \"files\" is missing or not an object");
	if (!json_is_string(format))
		return fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json: \"format\" is missing or not a string");
	size_t n = json_object_size(files);
	if (n > FMT_BUNDLE_MAX_MEMBERS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json lists %zu files (at most %u)", n,
				FMT_BUNDLE_MAX_MEMBERS);
	b->members = calloc(n ? n : 1, sizeof *b->members);
	b->format = strdup(json_string_value(format));
	if (!b->members || !b->format)
		return fmt_fail(e, FMT_IO, "out of memory");
	json_t *packer = json_object_get(root, "fmtkit");
	if (json_is_string(packer) && !(b->fmtkit = strdup(json_string_value(packer))))
		return fmt_fail(e, FMT_IO, "out of memory");
	const char *name;
	json_t *v;
	json_object_foreach(files, name, v) {
		fmt_kind k = parse_entry(name, v, &b->members[b->n_members], e);
		if (k != FMT_OK)
			return k;
		if (fmt_add_u64(b->total_bytes, b->members[b->n_members].size, &b->total_bytes))
			return fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json: total size overflows 64 bits");
		b->n_members++;
	}
	qsort(b->members, b->n_members, sizeof *b->members, cmp_member);
	return find_sigs(b, e);
}

static fmt_kind parse_manifest(const char *text, size_t len, fmt_bundle_info *b, fmt_err *e)
{
	json_error_t je;
	json_t *root = fmt_json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root && fmt_json_nomem(&je))
		return fmt_fail_nomem(e, "MANIFEST.json");
	if (!root)
		return fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json is not valid JSON at byte %d: %s",
				je.position, je.text);
	fmt_kind k = json_is_object(root) ? parse_manifest_json(root, b, e)
					  : fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json is not a JSON object");
	json_decref(root);
	return k;
}

/* The manifest text pack writes: compact, keys sorted. */
static fmt_kind manifest_text(const fmt_bundle_info *b, char **out, fmt_err *e)
{
	json_t *files = json_object(), *root = NULL;
	int bad = !files;
	for (size_t i = 0; i < b->n_members && !bad; i++) {
		const fmt_bundle_member *mb = &b->members[i];
		bad = json_object_set_new(files, mb->name, json_pack("{s:s,s:I}", "sha256", mb->sha256, "size",
								      (json_int_t)mb->size)) != 0;
	}
	if (!bad)
		root = json_pack("{s:o,s:s,s:s}", "files", files, "format", b->format, "fmtkit", FMTKIT_VERSION);
	else
		json_decref(files);
	*out = root ? json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(root);
	return *out ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory building MANIFEST.json");
}

/* ---- reading ---- */

/* A bundle read from a file (fd) through read_fd, or from a stream (src: standard input)
 * through read_stream. A failing read is kept in err, apart from libarchive's errors: it is
 * IoError, not a malformed bundle (reader_failed). */
typedef struct reader {
	struct archive *a;
	int fd;
	fmt_source *src;
	uint64_t pos;          /* src: the offset of the next read */
	uint8_t *buf;          /* what the last read gave libarchive */
	size_t block;          /* its size */
	size_t members;        /* member headers read so far */
	char last[256];        /* the last one's name (messages) */
	uint64_t members_end;  /* the tar offset where the last member's padded data ends */
	int eof;               /* a read gave libarchive the end of the input */
	int cut;               /* bundle_failed said it is cut short */
	int reads;             /* reads given to libarchive so far */
	int gzip;              /* the first one began with gzip's magic */
	int zstd;              /* ... with zstd's */
	fmt_err err;           /* a read's own failure */
} reader;

static void reader_close(reader *r)
{
	if (r->a)
		AR(archive_read_free)(r->a);
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	r->a = NULL;
	r->fd = -1;
	r->buf = NULL;
}

static const uint8_t gzip_magic[2] = { 0x1F, 0x8B };

static int is_gzip(const uint8_t *head, size_t n)
{
	return n >= 2 && memcmp(head, gzip_magic, 2) == 0;
}

/* gzip data (a .tar.gz, or anything gzip'd): fmtkit reads none, bundles are plain or zstd tars. */
static fmt_kind gzip_file(fmt_err *e)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "a gzip-compressed file, which fmtkit does not read: `gzip -dc` "
			"decompresses it (fmtkit's bundles are tars, plain or zstd-compressed, as `fmt-shard pack` "
			"makes them)");
}

static const uint8_t zstd_magic[4] = { 0x28, 0xB5, 0x2F, 0xFD };

static int is_zstd(const uint8_t *head, size_t n)
{
	return n >= 4 && memcmp(head, zstd_magic, 4) == 0;
}

/* A whole zstd frame of something else than a tar (a .csv.zst). */
static fmt_kind zstd_not_tar(fmt_err *e)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "zstd-compressed data that is no tar, which fmtkit does not read: "
			"`zstd -dc` decompresses it (a .csv.zst, say: `zstd -dc F | fmt-convert --from csv - OUT`)");
}

/* The first bytes handed to libarchive: gzip's or zstd's magic? (what a bundle reader says of a
 * .tar.gz, or of zstd data that is no tar) */
static void note_first_read(reader *r, size_t got)
{
	if (r->reads++ == 0) {
		r->gzip = is_gzip(r->buf, got);
		r->zstd = is_zstd(r->buf, got);
	}
}

static la_ssize_t read_stream(struct archive *a, void *ud, const void **out)
{
	reader *r = ud;
	size_t got = 0;
	if (fmt_source_read_upto(r->src, r->pos, r->buf, r->block, &got, &r->err) != FMT_OK) {
		AR(archive_set_error)(a, EIO, "%s", r->err.msg);
		return -1;
	}
	r->pos += got;
	r->eof |= got == 0;
	note_first_read(r, got);
	*out = r->buf;
	return (la_ssize_t)got;
}

static la_ssize_t read_fd(struct archive *a, void *ud, const void **out)
{
	reader *r = ud;
	ssize_t got;
	while ((got = read(r->fd, r->buf, r->block)) < 0 && errno == EINTR)
		;
	if (got < 0) {
		fmt_fail(&r->err, FMT_IO, "read: %s", strerror(errno));
		AR(archive_set_error)(a, EIO, "%s", r->err.msg);
		return -1;
	}
	r->eof |= got == 0;
	note_first_read(r, (size_t)got);
	*out = r->buf;
	return (la_ssize_t)got;
}

/* libarchive failed: was it a read (IoError, its message into e)? FMT_OK when it was not: the
 * bundle itself is malformed. */
static fmt_kind read_failed(const reader *r, fmt_err *e)
{
	if (r->err.kind != FMT_OK)
		fmt_fail(e, r->err.kind, "%s", r->err.msg);
	return r->err.kind;
}

static const char *archive_why(const reader *r)
{
	const char *why = AR(archive_error_string)(r->a);
	return why ? why : "unreadable";
}

/* libarchive failed on the bundle's bytes after it had asked past their end: the zstd data or
 * the tar ended inside a frame, header or member, so the bundle is cut short. Not when nothing
 * was read as a member yet and the data that is there is no tar at all (a whole zstd frame of
 * something else: "Unrecognized archive format"). A .tar.zst cut inside its compressed data said
 * "unrecognised format" (the probe found no member) or "not a tar bundle: Truncated zstd input". */
static int cut_short(const reader *r)
{
	/* EILSEQ: libarchive's ARCHIVE_ERRNO_FILE_FORMAT on Linux (archive_platform.h, not installed) */
	return r->eof && (r->members > 0 || AR(archive_errno)(r->a) != EILSEQ);
}

/* "truncated: the bundle ends before its first member", "... inside member 'x'" (with
 * libarchive's reason), or else fmt's message for a malformed bundle. */
static fmt_kind bundle_failed(reader *r, const char *member, const char *malformed, fmt_err *e)
{
	if (AR(archive_errno)(r->a) == ENOMEM) /* "Can't allocate memory for Pathname": not the file */
		return fmt_fail(e, FMT_IO, "out of memory reading the bundle (%s)", archive_why(r));
	if (!(r->cut = cut_short(r)))
		return fmt_fail(e, FMT_INVALID_FORMAT, "%s: %s", malformed, archive_why(r));
	if (member)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: the bundle ends inside member " NM " (%s)", member,
				archive_why(r));
	if (r->members)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: the bundle ends after member " NM ", inside the "
				"next header or the end-of-archive marker (%s)", r->last, archive_why(r));
	return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: the bundle ends before its first member (%s)",
			archive_why(r));
}

/* libarchive for tar and zstd, reading r->fd, or r->src when it is set. */
static fmt_kind reader_start(reader *r, size_t block, fmt_err *e)
{
	fmt_kind loaded = fmt_lazylib_load(&archive_lib, e);
	if (loaded != FMT_OK) {
		reader_close(r);
		return loaded;
	}
	r->a = AR(archive_read_new)();
	if (!r->a) {
		reader_close(r);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	/* out of memory registering them, libarchive crashed in archive_read_open (SIGSEGV) */
	if (AR(archive_read_support_filter_zstd)(r->a) < ARCHIVE_WARN || /* WARN: an external zstd */
	    AR(archive_read_support_format_tar)(r->a) < ARCHIVE_WARN) {
		fmt_kind k = fmt_fail(e, AR(archive_errno)(r->a) == ENOMEM ? FMT_IO : FMT_INTERNAL, "libarchive: %s",
				      archive_why(r));
		reader_close(r);
		return k;
	}
	r->block = block;
	if (!(r->buf = malloc(block))) {
		reader_close(r);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	errno = 0; /* libarchive returns some of its allocation failures without an error of its own */
	if (AR(archive_read_open)(r->a, r, NULL, r->src ? read_stream : read_fd, NULL) != ARCHIVE_OK) {
		fmt_kind k = read_failed(r, e) != FMT_OK ? e->kind
			     : errno == ENOMEM ? fmt_fail(e, FMT_IO, "out of memory reading the bundle")
			     : AR(archive_errno)(r->a) == ENOMEM ? bundle_failed(r, NULL, "", e)
			     : r->gzip		     ? gzip_file(e)
			     : r->zstd && !cut_short(r) ? zstd_not_tar(e)
						     : bundle_failed(r, NULL, "not a tar bundle", e);
		reader_close(r);
		return k;
	}
	return FMT_OK;
}

static fmt_kind reader_open(reader *r, const char *path, size_t block, fmt_err *e)
{
	struct stat st;
	memset(r, 0, sizeof *r);
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0)
		return fmt_fail(e, FMT_IO, "cannot open: %s", strerror(errno));
	if (fstat(r->fd, &st) != 0) {
		reader_close(r);
		return fmt_fail(e, FMT_IO, "cannot read: %s", strerror(errno));
	}
	fmt_kind k = fmt_input_check(&st, e);   /* a directory or a device (/dev/zero never ends) */
	if (k != FMT_OK) {
		reader_close(r);
		return k;
	}
	return reader_start(r, block, e);
}

static fmt_kind reader_open_source(reader *r, fmt_source *src, size_t block, fmt_err *e)
{
	memset(r, 0, sizeof *r);
	r->fd = -1;
	r->src = src;
	return reader_start(r, block, e);
}

static fmt_kind reader_open_stream(reader *r, fmt_source *src, fmt_err *e)
{
	return reader_open_source(r, src, READ_BLOCK, e);
}

#define TAR_BLOCK 512u

/* The end of an archive that has members: libarchive ends at the end of the data as at the
 * end-of-archive marker, two zero blocks after the last member (it consumes them), so the tar
 * offset it reached tells them apart. Without the marker, a bundle cut at a member boundary
 * (its last members and the marker lost, or only the marker) would pass for whole. */
static fmt_kind check_end_marker(reader *r, fmt_err *e)
{
	la_int64_t at = AR(archive_filter_bytes)(r->a, 0);
	if (r->members == 0 || (at >= 0 && (uint64_t)at >= r->members_end + 2 * TAR_BLOCK))
		return FMT_OK;
	return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: the bundle ends after member " NM " without the "
			"end-of-archive marker (two zero blocks of 512 bytes)", r->last);
}

/* The next member header; *ent NULL at the (marked) end of the archive. */
static fmt_kind next_header(reader *r, struct archive_entry **ent, fmt_err *e)
{
	int rc = AR(archive_read_next_header)(r->a, ent);
	/* a warning (a name not in the locale's charset) on a first member that is not the
	 * manifest: a tar that is no bundle, which read_manifest says (and the probe takes for a tar) */
	const char *first = rc == ARCHIVE_WARN && r->members == 0 && *ent ? AR(archive_entry_pathname)(*ent) : NULL;
	if (rc == ARCHIVE_WARN && r->members == 0 && *ent && (!first || strcmp(first, FMT_BUNDLE_MANIFEST) != 0))
		rc = ARCHIVE_OK;
	if (rc == ARCHIVE_EOF) {
		*ent = NULL;
		return check_end_marker(r, e);
	}
	if (rc != ARCHIVE_OK && read_failed(r, e) != FMT_OK)
		return e->kind;
	if (rc != ARCHIVE_OK)
		return bundle_failed(r, NULL, "not a valid tar bundle", e);
	/* the data follows the header libarchive has just consumed, padded to a whole block */
	la_int64_t at = AR(archive_filter_bytes)(r->a, 0), size = AR(archive_entry_size)(*ent);
	uint64_t end = 0;
	if (at >= 0 && size >= 0 && !fmt_add_u64((uint64_t)at, (uint64_t)size, &end) &&
	    !fmt_add_u64(end, (TAR_BLOCK - end % TAR_BLOCK) % TAR_BLOCK, &end))
		r->members_end = end;
	r->members++;
	const char *name = AR(archive_entry_pathname)(*ent);
	snprintf(r->last, sizeof r->last, "%s", name ? name : "");
	return FMT_OK;
}

/* A member must be a plain regular file under a safe name. */
static fmt_kind check_entry(struct archive_entry *ent, const char **name_out, fmt_err *e)
{
	const char *name = AR(archive_entry_pathname)(ent), *why = NULL;
	if (!name)
		return fmt_fail(e, FMT_INVALID_FORMAT, "a member has no name");
	if (AR(archive_entry_hardlink)(ent))
		why = "is a hard link";
	if (!why) {
		switch (AR(archive_entry_filetype)(ent)) {
		case AE_IFREG: break;
		case AE_IFLNK: why = "is a symbolic link"; break;
		case AE_IFDIR: why = "is a directory"; break;
		case AE_IFCHR: case AE_IFBLK: why = "is a device"; break;
		case AE_IFIFO: why = "is a FIFO"; break;
		default: why = "is not a regular file"; break;
		}
	}
	if (!why && AR(archive_entry_sparse_count)(ent) > 0)
		why = "is a sparse file";
	if (why)
		return fmt_fail(e, FMT_INVALID_FORMAT, "member " NM " %s (bundles hold regular files only)", name, why);
	if ((why = unsafe_member(name)) != NULL)
		return fmt_fail(e, FMT_INVALID_FORMAT, "member " NM " %s", name, why);
	if (!AR(archive_entry_size_is_set)(ent) || AR(archive_entry_size)(ent) < 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "member " NM " has no size", name);
	*name_out = name;
	return FMT_OK;
}

/* A first member other than the manifest (a directory "./" too): a tar, but not one fmt-shard
 * pack made. */
static fmt_kind not_a_bundle(const char *name, fmt_err *e)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "a tar archive, not an fmtkit bundle: its first member is " NM
			", not MANIFEST.json (`tar -tvf` lists its members, `tar -xf` extracts them; "
			"`fmt-shard pack` makes a bundle)", name ? name : "");
}

static fmt_kind read_manifest(reader *r, fmt_bundle_info *b, fmt_err *e)
{
	struct archive_entry *ent;
	const char *name;
	fmt_kind k = next_header(r, &ent, e);
	if (k != FMT_OK)
		return k;
	if (!ent)
		return fmt_fail(e, FMT_INVALID_FORMAT, "empty archive (expected MANIFEST.json first)");
	name = AR(archive_entry_pathname)(ent);
	if (!name || strcmp(name, FMT_BUNDLE_MANIFEST) != 0)
		return not_a_bundle(name, e);
	if ((k = check_entry(ent, &name, e)) != FMT_OK)
		return k;
	int64_t size = AR(archive_entry_size)(ent);
	if ((uint64_t)size > FMT_BUNDLE_MANIFEST_MAX)
		return fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json is %lld bytes (at most %zu)", (long long)size,
				FMT_BUNDLE_MANIFEST_MAX);
	char *text = malloc((size_t)size + 1);
	if (!text)
		return fmt_fail(e, FMT_IO, "out of memory");
	la_ssize_t got = AR(archive_read_data)(r->a, text, (size_t)size);
	if (got != (la_ssize_t)size && read_failed(r, e) != FMT_OK)
		k = e->kind;
	else if (got != (la_ssize_t)size)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "MANIFEST.json is truncated");
	else
		k = parse_manifest(text, (size_t)size, b, e);
	free(text);
	b->zstd = AR(archive_filter_code)(r->a, 0) == ARCHIVE_FILTER_ZSTD;
	return k;
}

static fmt_kind write_fd(int fd, const uint8_t *p, size_t n, const char *name, fmt_err *e)
{
	int failed = fmt_fd_write_all(fd, p, n);
	return failed ? fmt_fail(e, FMT_IO, "member " NM ": write: %s", name, strerror(failed)) : FMT_OK;
}

/* Stream one member's data through SHA-256 (and into out when extracting, out >= 0), then
 * compare; mb->format from its first bytes. */
static fmt_kind stream_member(reader *r, fmt_bundle_member *mb, int out, fmt_err *e)
{
	fmt_sha256 h;
	fmt_probe_stream head;
	uint64_t got = 0;
	fmt_probe_stream_init(&head, mb->size);
	fmt_kind rc = fmt_sha256_init(&h, e);
	while (rc == FMT_OK) {
		const void *buf;
		size_t n;
		la_int64_t off;
		int ar = AR(archive_read_data_block)(r->a, &buf, &n, &off);
		if (ar == ARCHIVE_EOF)
			break;
		if (ar != ARCHIVE_OK && read_failed(r, e) != FMT_OK)
			rc = e->kind;
		else if (ar != ARCHIVE_OK && cut_short(r))
			rc = bundle_failed(r, mb->name, NULL, e);
		else if (ar != ARCHIVE_OK)
			rc = fmt_fail(e, FMT_INVALID_FORMAT, "member " NM ": corrupt data (%s)", mb->name, archive_why(r));
		else if (off < 0 || (uint64_t)off != got)
			rc = fmt_fail(e, FMT_INVALID_FORMAT, "member " NM ": data out of order", mb->name);
		else if (fmt_add_u64(got, n, &got) || got > mb->size)
			rc = fmt_fail(e, FMT_CHECKSUM, "member " NM " holds more than the manifest's %llu bytes",
				      mb->name, (unsigned long long)mb->size);
		if (rc == FMT_OK)
			rc = fmt_sha256_update(&h, buf, n, e);
		if (rc == FMT_OK)
			rc = fmt_probe_stream_add(&head, buf, n, e);
		if (rc == FMT_OK && out >= 0)
			rc = write_fd(out, buf, n, mb->name, e);
	}
	uint8_t digest[FMT_SHA256_LEN];
	char hex[FMT_SHA256_HEX + 1];
	if (rc == FMT_OK)
		rc = fmt_sha256_final(&h, digest, e);
	fmt_sha256_free(&h);
	if (rc == FMT_OK && got != mb->size)
		rc = fmt_fail(e, FMT_CHECKSUM, "member " NM " holds %llu bytes, the manifest says %llu", mb->name,
			      (unsigned long long)got, (unsigned long long)mb->size);
	if (rc == FMT_OK)
		fmt_hex(digest, sizeof digest, hex);
	if (rc == FMT_OK && strcmp(hex, mb->sha256) != 0)
		rc = fmt_fail(e, FMT_CHECKSUM, "member " NM ": SHA-256 %s differs from the manifest's %s", mb->name,
			      hex, mb->sha256);
	if (rc == FMT_OK)
		mb->format = fmt_format_name(fmt_probe_stream_format(&head, FMT_FORMAT_ANY, NULL));
	fmt_probe_stream_free(&head);
	return rc;
}

/* Extraction: every member into the staging directory (whose names are the manifest's, in
 * its order); synced when it is to be committed. */
typedef struct extract {
	fmt_stagedir *stage;
	int sync;
} extract;

static fmt_kind extract_member(reader *r, fmt_bundle_member *mb, size_t i, extract *x, fmt_err *e)
{
	int fd = fmt_stagedir_create_file(x->stage, i, e);
	if (fd < 0)
		return e->kind;
	fmt_kind k = stream_member(r, mb, fd, e);
	if (k == FMT_OK && x->sync && fsync(fd) != 0)
		k = fmt_fail(e, FMT_IO, "member " NM ": fsync: %s", mb->name, strerror(errno));
	if (close(fd) != 0 && k == FMT_OK)
		k = fmt_fail(e, FMT_IO, "member " NM ": close: %s", mb->name, strerror(errno));
	return k;
}

static char *join_path(const char *dir, const char *name)
{
	char *p = NULL;
	size_t n = strlen(dir);
	if (asprintf(&p, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) < 0)
		return NULL;
	return p;
}

/* Every member after the manifest: checked, matched to the manifest, hashed (and written). */
static fmt_kind walk_members(reader *r, fmt_bundle_info *b, extract *x, fmt_err *e)
{
	unsigned char *seen = calloc(b->n_members ? b->n_members : 1, 1);
	fmt_kind k = seen ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	while (k == FMT_OK) {
		struct archive_entry *ent;
		const char *name;
		if ((k = next_header(r, &ent, e)) != FMT_OK || !ent)
			break;
		if ((k = check_entry(ent, &name, e)) != FMT_OK)
			break;
		fmt_bundle_member *mb = find_member(b, name);
		if (!mb) {
			k = strcmp(name, FMT_BUNDLE_MANIFEST) == 0
				    ? fmt_fail(e, FMT_INVALID_FORMAT, "duplicate member 'MANIFEST.json'")
				    : fmt_fail(e, FMT_SCHEMA, "member " NM " is not listed in MANIFEST.json", name);
			break;
		}
		size_t i = (size_t)(mb - b->members);
		if (seen[i]) {
			k = fmt_fail(e, FMT_INVALID_FORMAT, "duplicate member " NM, name);
			break;
		}
		seen[i] = 1;
		if ((uint64_t)AR(archive_entry_size)(ent) != mb->size) {
			k = fmt_fail(e, FMT_CHECKSUM, "member " NM " is %lld bytes, the manifest says %llu", name,
				     (long long)AR(archive_entry_size)(ent), (unsigned long long)mb->size);
			break;
		}
		k = x ? extract_member(r, mb, i, x, e) : stream_member(r, mb, -1, e);
	}
	for (size_t i = 0; i < b->n_members && k == FMT_OK; i++)
		if (!seen[i])
			k = fmt_fail(e, FMT_SCHEMA, "MANIFEST.json lists " NM " but the bundle has no such member",
				     b->members[i].name);
	free(seen);
	return k;
}

/* fmt_bundle_verify of the reader r that opening gave (k). */
static fmt_kind verify_read(reader *r, fmt_kind k, const char *bundle_path, fmt_bundle_info *info, fmt_err *e)
{
	fmt_bundle_info b;
	memset(&b, 0, sizeof b);
	if (k == FMT_OK) {
		k = read_manifest(r, &b, e);
		if (k == FMT_OK) {
			fmt_meter_planned(b.total_bytes);
			k = walk_members(r, &b, NULL, e);
		}
		reader_close(r);
	}
	if (k != FMT_OK)
		fmt_err_file(e, bundle_path);
	if (k == FMT_OK && info)
		*info = b;
	else
		fmt_bundle_info_free(&b);
	return k;
}

fmt_kind fmt_bundle_verify(const char *bundle_path, fmt_bundle_info *info, fmt_err *e)
{
	reader r;
	return verify_read(&r, reader_open(&r, bundle_path, READ_BLOCK, e), bundle_path, info, e);
}

fmt_kind fmt_bundle_verify_stream(fmt_source *src, fmt_bundle_info *info, fmt_err *e)
{
	reader r;
	return verify_read(&r, reader_open_stream(&r, src, e), src->path, info, e);
}

/* ---- unpack ---- */

static fmt_kind prepare_dir(const char *dir, int *created, fmt_err *e)
{
	struct stat st;
	*created = 0;
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return fmt_fail_file(e, FMT_IO, dir, "not a directory");
		return FMT_OK;
	}
	if (errno != ENOENT || mkdir(dir, 0777) != 0)
		return fmt_fail_file(e, FMT_IO, dir, "cannot create the directory: %s", strerror(errno));
	*created = 1;
	return FMT_OK;
}

static fmt_kind refuse_existing(const fmt_bundle_info *b, const char *dir, fmt_err *e)
{
	for (size_t i = 0; i < b->n_members; i++) {
		char *path = join_path(dir, b->members[i].name);
		if (!path)
			return fmt_fail(e, FMT_IO, "out of memory");
		fmt_kind k = fmt_sink_may_create(path, 0, e);
		free(path);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}


/* Every X.minisig member, read from the staging directory: with Ed25519 keys checked over X
 * there (its entry then names the key); with an HMAC key alone only parsed (nothing could
 * check it). where names the member to blame. */
static fmt_kind check_detached(fmt_bundle_info *b, fmt_stagedir *stage, const fmt_keyset *keys, char *where,
			       size_t where_len, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < b->n_sigs && k == FMT_OK; i++) {
		fmt_bundle_sig *sig = &b->sigs[i];
		const fmt_bundle_member *sm = &b->members[sig->sig];
		snprintf(where, where_len, "member %s", sm->name);
		if (sm->size > FMT_MS_FILE_MAX)
			return fmt_fail(e, FMT_INVALID_FORMAT, "member " NM " is %llu bytes: not a signature (at most %u)",
					sm->name, (unsigned long long)sm->size, FMT_MS_FILE_MAX);
		char *sig_path = fmt_stagedir_file_path(stage, sig->sig), *path = fmt_stagedir_file_path(stage, sig->file);
		char *text = NULL;
		size_t len = 0;
		k = sig_path && path ? fmt_read_small(sig_path, 0, FMT_MS_FILE_MAX, &text, &len, e)
				     : fmt_fail(e, FMT_IO, "out of memory");
		if (k == FMT_OK && keys->n_trusted) {
			char id[FMT_MS_KEY_ID_HEX];
			k = fmt_ms_check_detached(text, len, sm->name, path, keys->trusted, keys->n_trusted, id, e);
			if (k == FMT_OK)
				snprintf(sig->key_id, sizeof sig->key_id, "%s", id);
		} else if (k == FMT_OK) {
			fmt_ms_sig *parsed = malloc(sizeof *parsed);
			k = parsed ? fmt_ms_sig_parse(text, len, parsed, e) : fmt_fail(e, FMT_IO, "out of memory");
			if (k != FMT_OK && parsed)
				fmt_err_prefix(e, "%s", sm->name);
			free(parsed);
		}
		free(text);
		free(sig_path);
		free(path);
	}
	return k;
}

/* 1 when member i has a .minisig checked by a trusted key. */
static int detached_checked(const fmt_bundle_info *b, size_t i)
{
	for (size_t j = 0; j < b->n_sigs; j++)
		if (b->sigs[j].file == i && b->sigs[j].key_id[0])
			return 1;
	return 0;
}

/* What the verified signatures cover: each checked .minisig its member; every .minisig member
 * itself (it is a signature, not content); the set's embedded signature (when the driver
 * checked one, or when no .minisig stood in for it) the member that opens the set and every
 * file it opened (their digests are what that signature binds). */
static void mark_covered(const fmt_bundle_info *b, const fmt_model *m, size_t entry, int embedded,
			 unsigned char *covered)
{
	for (size_t j = 0; j < b->n_sigs; j++) {
		if (b->sigs[j].sig != SIZE_MAX)
			covered[b->sigs[j].sig] = 1;
		if (b->sigs[j].key_id[0])
			covered[b->sigs[j].file] = 1;
	}
	if (!embedded)
		return;
	covered[entry] = 1;
	for (size_t i = 0; i < m->n_sources; i++) {
		const fmt_bundle_member *mb = find_member(b, fmt_base_name(m->sources[i].path));
		if (mb)
			covered[mb - b->members] = 1;
	}
}

/* With a key, the set inside must verify in the staging directory (its .minisig members
 * first) and the verified signatures must cover every member (mark_covered). Anything else in
 * the bundle, even with a matching manifest digest, is unsigned content and refused, named. */
static fmt_kind check_signed(fmt_bundle_info *b, fmt_stagedir *stage, const fmt_verify_opts *vo,
			     char *where, size_t where_len, fmt_err *e)
{
	const char *entry = fmt_bundle_entry(b);
	b->keyed = 1;
	fmt_kind k = check_detached(b, stage, &vo->keys, where, where_len, e);
	if (k != FMT_OK || (vo->signed_elsewhere && !vo->keys.hmac))
		return k; /* the bundle's own signature covers every member: the .minisig members were all to check */
	if (!entry)
		return fmt_fail(e, FMT_SIGNATURE, "bundle of " NM " has no member that opens a signed set",
				b->format ? b->format : "?");
	size_t ei = (size_t)(find_member(b, entry) - b->members);
	snprintf(where, where_len, "member %s", entry);
	char *path = fmt_stagedir_file_path(stage, ei);
	if (!path)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_model m;
	k = fmt_model_open(&m, path, NULL, e);
	free(path);
	if (k != FMT_OK)
		return k;
	fmt_signer signer;
	memset(&signer, 0, sizeof signer);
	fmt_verify_opts mine = *vo;
	mine.signer = &signer;
	mine.signed_elsewhere = vo->signed_elsewhere || detached_checked(b, ei);
	k = fmt_model_verify(&m, &mine, e);
	/* Ed25519 only: HMAC checks keep the report they always had (as fmt-verify's of a file) */
	if (k == FMT_OK && signer.kind && strcmp(signer.kind, "ed25519") == 0) {
		fmt_bundle_sig *emb = &b->sigs[b->n_sigs++]; /* find_sigs left room for it */
		*emb = (fmt_bundle_sig){ .file = ei, .sig = SIZE_MAX, .kind = signer.kind };
		snprintf(emb->key_id, sizeof emb->key_id, "%s", signer.key_id);
	}
	unsigned char *covered = calloc(b->n_members ? b->n_members : 1, 1);
	if (k == FMT_OK && !covered)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		mark_covered(b, &m, ei, signer.kind || !mine.signed_elsewhere, covered);
	for (size_t i = 0; k == FMT_OK && i < b->n_members; i++)
		if (!covered[i]) {
			snprintf(where, where_len, "member %s", b->members[i].name);
			k = fmt_fail(e, FMT_SIGNATURE,
				     "member " NM " is not covered by the verified signature of " NM
				     " (with a key, a bundle may hold only the signed set)",
				     b->members[i].name, entry);
		}
	free(covered);
	fmt_model_free(&m);
	return k;
}

/* Extract into a fresh staging directory in parent, check, and commit into dir (NULL: only
 * check). */
static fmt_kind extract_checked(reader *r, fmt_bundle_info *b, const char *parent, const char *dir,
				unsigned flags, const fmt_verify_opts *vo, char *where, size_t where_len,
				fmt_err *e)
{
	const char **names = calloc(b->n_members ? b->n_members : 1, sizeof *names);
	if (!names)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < b->n_members; i++)
		names[i] = b->members[i].name;
	fmt_stagedir stage;
	fmt_kind k = fmt_stagedir_create(&stage, parent, dir ? ".fmtkit-unpack-" : "fmtkit-bundle-", names,
					 b->n_members, e);
	free(names);
	if (k != FMT_OK)
		return k;
	extract x = { .stage = &stage, .sync = dir != NULL };
	k = walk_members(r, b, &x, e);
	if (k == FMT_OK && vo && !fmt_keyset_empty(&vo->keys))
		k = check_signed(b, &stage, vo, where, where_len, e);
	if (k == FMT_OK && dir) {
		/* Members get the mode a plain creat() would give them, as other outputs do. */
		mode_t mask = umask(0);
		umask(mask);
		for (size_t i = 0; k == FMT_OK && i < b->n_members; i++)
			if (fchmodat(stage.fd, b->members[i].name, 0666 & ~mask, 0) != 0)
				k = fmt_fail(e, FMT_IO, "member " NM ": chmod: %s", b->members[i].name, strerror(errno));
		if (k == FMT_OK)
			k = fmt_stagedir_commit(&stage, dir, (flags & FMT_SINK_FORCE) != 0, e);
	}
	fmt_stagedir_remove(&stage);
	return k;
}

/* The failure names the bundle, and the member when one is to blame. */
static void name_failure(fmt_err *e, const char *bundle_path, const char *where)
{
	if (where[0])
		snprintf(e->file, sizeof e->file, "%s (%s)", bundle_path, where);
	else
		fmt_err_file(e, bundle_path);
}

/* No member may land on the bundle, nor on a file guard protects (the key files read). */
static fmt_kind refuse_read_files(const fmt_bundle_info *b, const char *dir, const char *bundle_path,
				  fmt_bundle_guard guard, void *ctx, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (size_t i = 0; k == FMT_OK && i < b->n_members; i++) {
		char *path = join_path(dir, b->members[i].name);
		if (!path)
			return fmt_fail(e, FMT_IO, "out of memory");
		if (fmt_same_file(path, bundle_path))
			k = fmt_fail(e, FMT_USAGE, "member " NM " would replace the bundle itself (%s)", b->members[i].name,
				     path);
		else if (guard)
			k = guard(ctx, path, e);
		free(path);
	}
	return k;
}

fmt_kind fmt_bundle_unpack(const char *bundle_path, const char *dir, unsigned flags, const fmt_verify_opts *vo,
			   fmt_bundle_guard guard, void *guard_ctx, fmt_bundle_info *info, fmt_err *e)
{
	fmt_bundle_info b;
	reader r;
	int created = 0;
	char where[512] = "";
	memset(&b, 0, sizeof b);
	fmt_kind k = reader_open(&r, bundle_path, READ_BLOCK, e);
	if (k != FMT_OK) {
		fmt_err_file(e, bundle_path);
		return k;
	}
	k = read_manifest(&r, &b, e);
	if (k == FMT_OK)
		k = prepare_dir(dir, &created, e);
	if (k == FMT_OK) {
		fmt_meter_planned(b.total_bytes); /* hashed while extracted */
		if (vo && !fmt_keyset_empty(&vo->keys))
			fmt_meter_planned(b.total_bytes); /* and by the set's verification */
	}
	if (k == FMT_OK)
		k = refuse_read_files(&b, dir, bundle_path, guard, guard_ctx, e);
	if (k == FMT_OK && !(flags & FMT_SINK_FORCE))
		k = refuse_existing(&b, dir, e);
	if (k == FMT_OK) {
		k = extract_checked(&r, &b, dir, dir, flags, vo, where, sizeof where, e);
		if (k != FMT_OK)
			name_failure(e, bundle_path, where);
	} else {
		fmt_err_file(e, bundle_path);
	}
	reader_close(&r);
	if (k != FMT_OK && created)
		rmdir(dir);
	if (k == FMT_OK && info)
		*info = b;
	else
		fmt_bundle_info_free(&b);
	return k;
}

/* fmt_bundle_check_signed of the reader r that opening gave (k). */
static fmt_kind check_signed_read(reader *r, fmt_kind k, const char *bundle_path, const fmt_verify_opts *vo,
				  fmt_bundle_info *info, fmt_err *e)
{
	fmt_bundle_info b;
	char where[512] = "";
	memset(&b, 0, sizeof b);
	if (k == FMT_OK) {
		k = read_manifest(r, &b, e);
		if (k == FMT_OK) {
			fmt_meter_planned(b.total_bytes); /* hashed while extracted */
			fmt_meter_planned(b.total_bytes); /* and by the set's verification */
			k = extract_checked(r, &b, fmt_temp_dir(), NULL, 0, vo, where, sizeof where, e);
		}
		reader_close(r);
	}
	if (k != FMT_OK)
		name_failure(e, bundle_path, where);
	if (k == FMT_OK && info)
		*info = b;
	else
		fmt_bundle_info_free(&b);
	return k;
}

fmt_kind fmt_bundle_check_signed(const char *bundle_path, const fmt_verify_opts *vo, fmt_bundle_info *info,
				 fmt_err *e)
{
	reader r;
	return check_signed_read(&r, reader_open(&r, bundle_path, READ_BLOCK, e), bundle_path, vo, info, e);
}

fmt_kind fmt_bundle_check_signed_stream(fmt_source *src, const fmt_verify_opts *vo, fmt_bundle_info *info,
					fmt_err *e)
{
	reader r;
	return check_signed_read(&r, reader_open_stream(&r, src, e), src->path, vo, info, e);
}

/* ---- probe ---- */

/* Whether libarchive reads a member header from r (k: how opening it went), then r closed: a
 * tar, a bundle or not (reading it as a bundle says which), also one cut inside its first header
 * (a bundle cut short, which reading it says). Data that is no tar (its header checksum wrong)
 * is not. */
static int reads_tar(reader *r, fmt_kind k)
{
	fmt_err e;
	struct archive_entry *ent;
	int yes = 0;
	if (k == FMT_OK && (k = next_header(r, &ent, &e)) == FMT_OK)
		yes = ent != NULL;
	yes |= k == FMT_INVALID_FORMAT && r->cut;
	/* libarchive not loaded, or out of memory reading (or a read error): the bundle's own path
	 * reports it, not a later "unrecognised format" or "a bundle this tool does not read" */
	yes |= k == FMT_IO;
	reader_close(r);
	return yes;
}

/* A zstd frame, or a tar's mark (POSIX "ustar\0" or GNU "ustar " at offset 257), which libarchive
 * then confirms (reads_tar): no format that fmtkit reads begins so. */
static int may_be_tar(const uint8_t *head, size_t n)
{
	return is_zstd(head, n) || (n >= 512 && memcmp(head + 257, "ustar", 5) == 0);
}

fmt_kind fmt_bundle_open_stdin(fmt_source *src, int *is_bundle, fmt_err *e)
{
	uint8_t head[512];
	size_t n = 0;
	if (fmt_source_open_sequential(src, "-", e) != FMT_OK)
		return e->kind;
	if (fmt_source_read_upto(src, 0, head, sizeof head, &n, e) != FMT_OK) {
		fmt_source_close(src);
		return e->kind;
	}
	*is_bundle = fmt_bundle_probe_head(head, n);
	return FMT_OK;
}

int fmt_bundle_probe_head(const uint8_t *head, size_t n)
{
	if (is_zstd(head, n))
		return 1;
	fmt_source src;
	fmt_err e;
	reader r;
	if (!may_be_tar(head, n) || fmt_source_from_memory(&src, "-", head, n, &e) != FMT_OK)
		return 0;
	int yes = reads_tar(&r, reader_open_stream(&r, &src, &e));
	fmt_source_close(&src);
	return yes;
}

int fmt_bundle_probe(const char *path)
{
	uint8_t head[512];
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (n < sizeof head) {
		ssize_t got = read(fd, head + n, sizeof head - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	reader r;
	fmt_err e;
	return may_be_tar(head, n) && reads_tar(&r, reader_open(&r, path, PROBE_BLOCK, &e));
}

int fmt_bundle_explain(fmt_source *s, const uint8_t *head, size_t n, fmt_err *e)
{
	reader r;
	struct archive_entry *ent = NULL;
	fmt_err why;
	if (is_gzip(head, n)) {
		gzip_file(e);
		return 1;
	}
	if (!may_be_tar(head, n))
		return 0;
	fmt_kind read = reader_open_source(&r, s, PROBE_BLOCK, &why);
	if (read == FMT_OK)
		read = next_header(&r, &ent, &why);
	int said = 1;
	if (read == FMT_OK && ent) {
		const char *name = AR(archive_entry_pathname)(ent);
		if (!name || strcmp(name, FMT_BUNDLE_MANIFEST) != 0)
			not_a_bundle(name, e);
		else
			fmt_fail(e, FMT_INVALID_FORMAT, "an fmtkit bundle (tar%s), which this tool does not read: "
				 "`fmt-shard unpack` extracts its files; fmt-inspect and fmt-verify read it as it is, "
				 "`fmt-sign sign -s` signs it whole (a detached .minisig, which fmt-verify -p checks)",
				 AR(archive_filter_code)(r.a, 0) == ARCHIVE_FILTER_ZSTD ? ", zstd" : "");
	} else if (read == FMT_INVALID_FORMAT && r.cut) {
		*e = why;   /* "truncated: the bundle ends before its first member (...)", as fmt-inspect says */
	} else if (read == FMT_INVALID_FORMAT && is_zstd(head, n)) {
		zstd_not_tar(e);
	} else {
		said = 0;
	}
	reader_close(&r);
	return said;
}

/* ---- pack ---- */

typedef struct pack_file {
	char *path;
	fmt_source src;
	int open;
} pack_file;

typedef struct pack_out {
	fmt_sink *sink;
	fmt_err err;                 /* the sink's own failure, kept apart from libarchive's */
	int failed;
} pack_out;

static la_ssize_t pack_write_cb(struct archive *a, void *ud, const void *buf, size_t n)
{
	pack_out *o = ud;
	if (fmt_sink_write(o->sink, buf, n, &o->err) != FMT_OK) {
		o->failed = 1;
		AR(archive_set_error)(a, EIO, "write failed");
		return -1;
	}
	return (la_ssize_t)n;
}

static int cmp_pack_file(const void *a, const void *b)
{
	return strcmp(fmt_base_name(((const pack_file *)a)->path), fmt_base_name(((const pack_file *)b)->path));
}

/* FILE.minisig beside each of the n files, when it is a regular file: appended to f. */
static fmt_kind add_signatures(pack_file *f, size_t *n, fmt_err *e)
{
	size_t files = *n;
	for (size_t i = 0; i < files; i++) {
		struct stat st;
		char *sig = NULL;
		if (asprintf(&sig, "%s" SIG_SUFFIX, f[i].path) < 0)
			return fmt_fail(e, FMT_IO, "out of memory");
		if (stat(sig, &st) == 0 && S_ISREG(st.st_mode))
			f[(*n)++].path = sig;
		else
			free(sig);
	}
	return FMT_OK;
}

/* The files of the set: the path given plus every source of the opened model, and the
 * FILE.minisig beside any of them, by name. */
static fmt_kind collect_files(const char *set_path, pack_file **out, size_t *n_out, char **format,
			      fmt_err *e)
{
	fmt_model m;
	fmt_kind k = fmt_model_open(&m, set_path, NULL, e);
	if (k != FMT_OK)
		return k;
	pack_file *f = calloc(2 * (m.n_sources + 1), sizeof *f);
	size_t n = 0;
	*format = strdup(m.driver->name);
	if (!f || !*format)
		k = fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i <= m.n_sources && k == FMT_OK; i++) {
		const char *p = i == 0 ? set_path : m.sources[i - 1].path;
		int dup = 0;
		for (size_t j = 0; j < n && !dup; j++)
			dup = strcmp(f[j].path, p) == 0 || fmt_same_file(f[j].path, p);
		if (!dup && !(f[n++].path = strdup(p)))
			k = fmt_fail(e, FMT_IO, "out of memory");
	}
	fmt_model_free(&m);
	if (k == FMT_OK)
		k = add_signatures(f, &n, e);
	if (k == FMT_OK && n > FMT_BUNDLE_MAX_MEMBERS)
		k = fmt_fail(e, FMT_UNSUPPORTED, "the set has %zu files (at most %u)", n, FMT_BUNDLE_MAX_MEMBERS);
	if (k == FMT_OK)
		qsort(f, n, sizeof *f, cmp_pack_file);
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		const char *name = fmt_base_name(f[i].path);
		const char *why = strcmp(name, FMT_BUNDLE_MANIFEST) == 0 ? "is reserved for the manifest"
									 : unsafe_member(name);
		if (why)
			k = fmt_fail(e, FMT_UNSUPPORTED, "file name " NM " %s", name, why);
		else if (i > 0 && strcmp(name, fmt_base_name(f[i - 1].path)) == 0)
			k = fmt_fail(e, FMT_SCHEMA, "two files of the set are named " NM, name);
	}
	*out = f;
	*n_out = n;
	return k;
}

static void free_files(pack_file *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++) {
		if (f[i].open)
			fmt_source_close(&f[i].src);
		free(f[i].path);
	}
	free(f);
}

/* First pass: open every file, then hash each (the meter is told both passes' bytes). */
static fmt_kind hash_files(pack_file *f, size_t n, fmt_bundle_info *b, fmt_err *e)
{
	uint64_t planned = 0;
	b->members = calloc(n ? n : 1, sizeof *b->members);
	if (!b->members)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n; i++) {
		fmt_kind k = fmt_source_open(&f[i].src, f[i].path, e);
		if (k != FMT_OK)
			return k;
		f[i].open = 1;
		planned += f[i].src.size;
	}
	fmt_meter_planned(planned); /* hashed here */
	fmt_meter_planned(planned); /* and again as the archive is written */
	for (size_t i = 0; i < n; i++) {
		fmt_sha256 h;
		uint8_t digest[FMT_SHA256_LEN];
		fmt_kind k;
		fmt_bundle_member *mb = &b->members[b->n_members++];
		if (!(mb->name = strdup(fmt_base_name(f[i].path))))
			return fmt_fail(e, FMT_IO, "out of memory");
		mb->size = f[i].src.size;
		k = fmt_sha256_init(&h, e);
		if (k == FMT_OK)
			k = fmt_sha256_source(&h, &f[i].src, 0, mb->size, e);
		if (k == FMT_OK)
			k = fmt_sha256_final(&h, digest, e);
		fmt_sha256_free(&h);
		if (k != FMT_OK) {
			fmt_err_file(e, f[i].path);
			return k;
		}
		fmt_hex(digest, sizeof digest, mb->sha256);
		if (fmt_add_u64(b->total_bytes, mb->size, &b->total_bytes))
			return fmt_fail(e, FMT_UNSUPPORTED, "total size overflows 64 bits");
	}
	return FMT_OK;
}

static fmt_kind put_header(struct archive *a, const char *name, uint64_t size, fmt_err *e)
{
	struct archive_entry *ent = AR(archive_entry_new)();
	if (!ent)
		return fmt_fail(e, FMT_IO, "out of memory");
	AR(archive_entry_set_pathname)(ent, name);
	AR(archive_entry_set_size)(ent, (la_int64_t)size);
	AR(archive_entry_set_filetype)(ent, AE_IFREG);
	AR(archive_entry_set_perm)(ent, 0644);
	AR(archive_entry_set_mtime)(ent, 0, 0);
	AR(archive_entry_set_uid)(ent, 0);
	AR(archive_entry_set_gid)(ent, 0);
	int rc = AR(archive_write_header)(a, ent);
	AR(archive_entry_free)(ent);
	if (rc != ARCHIVE_OK)
		return fmt_fail(e, FMT_IO, "cannot write the header of " NM ": %s", name, AR(archive_error_string)(a));
	return FMT_OK;
}

static fmt_kind put_data(struct archive *a, const void *p, size_t n, fmt_err *e)
{
	if (n && AR(archive_write_data)(a, p, n) != (la_ssize_t)n)
		return fmt_fail(e, FMT_IO, "cannot write to the archive: %s", AR(archive_error_string)(a));
	return FMT_OK;
}

/* Second pass: copy one file into the archive, hashing again to catch a change in between. */
static fmt_kind put_file(struct archive *a, pack_file *f, const fmt_bundle_member *mb, uint8_t *buf,
			 fmt_err *e)
{
	fmt_sha256 h;
	uint8_t digest[FMT_SHA256_LEN];
	char hex[FMT_SHA256_HEX + 1];
	fmt_kind k = put_header(a, mb->name, mb->size, e);
	if (k == FMT_OK)
		k = fmt_sha256_init(&h, e);
	if (k != FMT_OK)
		return k;
	for (uint64_t off = 0; off < mb->size && k == FMT_OK;) {
		size_t step = mb->size - off < READ_BLOCK ? (size_t)(mb->size - off) : READ_BLOCK;
		k = fmt_source_read(&f->src, off, buf, step, e);
		if (k == FMT_OK)
			k = fmt_sha256_update(&h, buf, step, e);
		if (k == FMT_OK)
			k = put_data(a, buf, step, e);
		off += step;
	}
	if (k == FMT_OK)
		k = fmt_sha256_final(&h, digest, e);
	fmt_sha256_free(&h);
	if (k == FMT_OK) {
		fmt_hex(digest, sizeof digest, hex);
		if (strcmp(hex, mb->sha256) != 0)
			k = fmt_fail(e, FMT_CHECKSUM, "the file changed while it was being packed");
	}
	if (k != FMT_OK)
		fmt_err_file(e, f->path);
	return k;
}

static fmt_kind write_archive(fmt_sink *k, int zstd, pack_file *f, const fmt_bundle_info *b,
			      const char *manifest, fmt_err *e)
{
	fmt_kind loaded = fmt_lazylib_load(&archive_lib, e);
	if (loaded != FMT_OK)
		return loaded;
	pack_out out = { .sink = k };
	struct archive *a = AR(archive_write_new)();
	uint8_t *buf = malloc(READ_BLOCK);
	fmt_kind r = FMT_OK;
	if (!a || !buf)
		r = fmt_fail(e, FMT_IO, "out of memory");
	if (r == FMT_OK && AR(archive_write_set_format_pax_restricted)(a) != ARCHIVE_OK)
		r = fmt_fail(e, FMT_INTERNAL, "libarchive: %s", AR(archive_error_string)(a));
	if (r == FMT_OK && zstd && AR(archive_write_add_filter_zstd)(a) != ARCHIVE_OK)
		r = fmt_fail(e, FMT_UNSUPPORTED, "libarchive cannot write zstd: %s", AR(archive_error_string)(a));
	/* A compressed stream must end with its frame: no zero padding after it. */
	if (r == FMT_OK && zstd && AR(archive_write_set_bytes_in_last_block)(a, 1) != ARCHIVE_OK)
		r = fmt_fail(e, FMT_INTERNAL, "libarchive: %s", AR(archive_error_string)(a));
	if (r == FMT_OK && AR(archive_write_open)(a, &out, NULL, pack_write_cb, NULL) != ARCHIVE_OK)
		r = fmt_fail(e, FMT_IO, "cannot start the archive: %s", AR(archive_error_string)(a));
	if (r == FMT_OK)
		r = put_header(a, FMT_BUNDLE_MANIFEST, strlen(manifest), e);
	if (r == FMT_OK)
		r = put_data(a, manifest, strlen(manifest), e);
	for (size_t i = 0; i < b->n_members && r == FMT_OK; i++)
		r = put_file(a, &f[i], &b->members[i], buf, e);
	if (r == FMT_OK && AR(archive_write_close)(a) != ARCHIVE_OK)
		r = fmt_fail(e, FMT_IO, "cannot finish the archive: %s", AR(archive_error_string)(a));
	if (out.failed && r != FMT_OK) {
		*e = out.err; /* more precise than libarchive's "write failed" */
		r = e->kind;
	}
	if (a)
		AR(archive_write_free)(a);
	free(buf);
	return r;
}

fmt_kind fmt_bundle_pack(const char *set_path, const char *bundle_path, unsigned sink_flags,
			 fmt_bundle_info *info, fmt_err *e)
{
	fmt_bundle_info b;
	pack_file *f = NULL;
	size_t n = 0;
	char *manifest = NULL;
	memset(&b, 0, sizeof b);
	if (strcmp(set_path, "-") == 0)
		return fmt_fail(e, FMT_USAGE, "a set cannot be read from standard input");
	fmt_kind k = collect_files(set_path, &f, &n, &b.format, e);
	for (size_t i = 0; i < n && k == FMT_OK; i++)
		k = fmt_check_distinct(f[i].path, bundle_path, e);
	if (k == FMT_OK)
		k = hash_files(f, n, &b, e);
	if (k == FMT_OK)
		k = find_sigs(&b, e);
	if (k == FMT_OK)
		k = manifest_text(&b, &manifest, e);
	fmt_sink sink;
	if (k == FMT_OK && (k = fmt_sink_open(&sink, bundle_path, sink_flags, e)) == FMT_OK) {
		b.zstd = fmt_ends_with_nocase(bundle_path, ".zst");
		k = write_archive(&sink, b.zstd, f, &b, manifest, e);
		if (k == FMT_OK)
			k = fmt_sink_commit(&sink, e);
		else
			fmt_sink_abort(&sink);
	}
	free(manifest);
	free_files(f, n);
	if (k == FMT_OK && info)
		*info = b;
	else
		fmt_bundle_info_free(&b);
	return k;
}

json_t *fmt_bundle_sigs_json(const fmt_bundle_info *b)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < b->n_sigs; i++) {
		const fmt_bundle_sig *sig = &b->sigs[i];
		const char *file = b->members[sig->file].name;
		json_t *o = json_pack("{s:o,s:s}", "file", fmt_json_string(file, strlen(file)), "kind", sig->kind);
		if (o && sig->sig != SIZE_MAX) {
			const char *name = b->members[sig->sig].name;
			json_object_set_new(o, "signature", fmt_json_string(name, strlen(name)));
		}
		if (o)
			json_object_set_new(o, "checked", json_boolean(sig->key_id[0]));
		if (o && sig->key_id[0]) {
			json_object_set_new(o, "key_id", json_string(sig->key_id));
			json_object_set_new(o, "trusted", json_true());
		}
		json_array_append_new(a, o);
	}
	return a;
}

/* The distinct key ids of the checked .minisig signatures, ", "-separated, and their count. */
static size_t minisig_keys(const fmt_bundle_info *b, char *ids, size_t n)
{
	size_t used = 0, keys = 0;
	ids[0] = '\0';
	for (size_t i = 0; i < b->n_sigs; i++) {
		const char *id = b->sigs[i].key_id;
		if (b->sigs[i].sig == SIZE_MAX || !id[0] || strstr(ids, id))
			continue;
		if (used + strlen(id) + 3 < n)
			used += (size_t)snprintf(ids + used, n - used, "%s%s", keys ? ", " : "", id);
		keys++;
	}
	return keys;
}

void fmt_bundle_sigs_text(const fmt_bundle_info *b, FILE *out)
{
	size_t minisigs = 0, checked = 0;
	char ids[256];
	for (size_t i = 0; i < b->n_sigs; i++) {
		minisigs += b->sigs[i].sig != SIZE_MAX;
		checked += b->sigs[i].sig != SIZE_MAX && b->sigs[i].key_id[0];
	}
	size_t keys = minisig_keys(b, ids, sizeof ids);
	const char *members = minisigs == 1 ? "member" : "members";
	if (minisigs && checked == minisigs)
		fprintf(out, ", .minisig of %zu %s by trusted key%s %s", minisigs, members, keys == 1 ? "" : "s", ids);
	else if (minisigs)
		fprintf(out, ", .minisig of %zu %s (not checked: no %skey given)", minisigs, members,
			b->keyed ? "Ed25519 " : "");
	char by[48];
	for (size_t i = 0; i < b->n_sigs; i++)
		if (b->sigs[i].sig == SIZE_MAX)
			fprintf(out, ", %s signature by %s", b->sigs[i].kind, fmt_signer_name(b->sigs[i].key_id, by, sizeof by));
}

const char *fmt_bundle_entry(const fmt_bundle_info *b)
{
	const fmt_driver *d = b->format ? fmt_driver_by_name(b->format) : NULL;
	for (size_t i = 0; d && i < b->n_members; i++)
		if (fmt_driver_by_extension(b->members[i].name) == d)
			return b->members[i].name;
	return NULL;
}
