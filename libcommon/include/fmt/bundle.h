/* Tar bundles of a model file or shard set (fmt-shard pack/unpack, fmt-verify): the files of the
 * set plus MANIFEST.json = {"files":{"<member>":{"sha256":"<hex>","size":N}},"format":"<driver>",
 * "fmtkit":"X.Y.Z"} (compact, sorted keys), the manifest first, then the members sorted by name;
 * ustar/pax written by libarchive, zstd-compressed when the name ends in ".zst"; deterministic
 * (mtime 0, uid/gid 0, mode 0644), so the same set always gives the same bytes.
 *
 * Reading (verify and unpack) refuses, as InvalidFormat: a first member other than the
 * manifest, a malformed manifest, absolute paths, ".." or any '/' (members are plain file
 * names), links, devices, fifos, directories, sparse members, duplicate members; as
 * SchemaMismatch: a member the manifest does not list or a listed one that is absent; as
 * ChecksumMismatch: a size or SHA-256 that differs from the manifest. */
#ifndef FMT_BUNDLE_H
#define FMT_BUNDLE_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/crypto.h"
#include "fmt/err.h"

#define FMT_BUNDLE_MANIFEST "MANIFEST.json"
#define FMT_BUNDLE_MANIFEST_MAX ((size_t)16 << 20) /* largest manifest read */
#define FMT_BUNDLE_MAX_MEMBERS 10000u

typedef struct fmt_bundle_member {
	char *name;                          /* plain file name */
	uint64_t size;
	char sha256[FMT_SHA256_HEX + 1];     /* lowercase hex */
} fmt_bundle_member;

/* What a bundle holds (filled by pack, verify and unpack; free with fmt_bundle_info_free). */
typedef struct fmt_bundle_info {
	char *format;                        /* the manifest's "format": a driver name */
	fmt_bundle_member *members;          /* sorted by name; the manifest itself not included */
	size_t n_members;
	uint64_t total_bytes;                /* sum of the member sizes */
	int zstd;                            /* 1 if the bundle is zstd-compressed */
} fmt_bundle_info;

void fmt_bundle_info_free(fmt_bundle_info *b);

/* The member a tool opens to get the whole set: the one whose name the manifest's format
 * answers to (the index, or the first GGUF shard: members are sorted), or NULL. */
const char *fmt_bundle_entry(const fmt_bundle_info *b);

/* 1 if path looks like a bundle: a tar ("ustar" at offset 257) whose first member is
 * MANIFEST.json, or a zstd frame (28 B5 2F FD) whose decompressed tar starts with it. 0 for
 * anything else, including unreadable files. Reads only the first block. */
int fmt_bundle_probe(const char *path);

/* Pack the set that set_path opens (a single file, an index, a GGUF first shard: every file of
 * the set is a member) into bundle_path, atomically (FMT_SINK_FORCE overwrites). The files are
 * hashed, then written and hashed again: a file that changed meanwhile is ChecksumMismatch.
 * info may be NULL. */
fmt_kind fmt_bundle_pack(const char *set_path, const char *bundle_path, unsigned sink_flags,
			 fmt_bundle_info *info, fmt_err *e);

/* Check a bundle without writing anything: every rule above, each member hashed as it streams
 * by. Opens nothing but the bundle. info may be NULL. */
fmt_kind fmt_bundle_verify(const char *bundle_path, fmt_bundle_info *info, fmt_err *e);

struct fmt_verify_opts;

/* Extract into dir (created if missing, one level). Existing files of the same names are
 * refused (UsageError) before anything is written unless flags has FMT_SINK_FORCE. Every member
 * is written into a private staging directory made in dir (fmt/stagedir.h) and hashed as it is
 * written. With vo holding a key, the set is then verified there with it, and every member
 * must be covered by that verified signature: the member that opens the set or a file it
 * opened; any other member is SignatureInvalid, named in e->file. Only when all of that passed
 * are the members moved into place together; with FMT_SINK_FORCE existing files are replaced
 * by rename and all kept if a move fails; a directory in the way is refused. On any failure or
 * signal nothing is left behind and nothing that existed is changed (dir removed if this call
 * created it). vo may be NULL. */
fmt_kind fmt_bundle_unpack(const char *bundle_path, const char *dir, unsigned flags,
			   const struct fmt_verify_opts *vo, fmt_bundle_info *info, fmt_err *e);

/* Verify the set inside a bundle with the key of vo, by the rules of fmt_bundle_unpack, in a
 * private directory made in $TMPDIR (or /tmp) and removed afterwards, also on signals. */
fmt_kind fmt_bundle_check_signed(const char *bundle_path, const struct fmt_verify_opts *vo,
				 fmt_bundle_info *info, fmt_err *e);

#endif
