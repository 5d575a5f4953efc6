/* Tar bundles of a model file or shard set (fmt-shard pack/unpack, fmt-verify): the files of the
 * set plus MANIFEST.json = {"files":{"<member>":{"sha256":"<hex>","size":N}},"format":"<driver>",
 * "fmtkit":"X.Y.Z"} (compact, sorted keys), the manifest first, then the members sorted by name;
 * ustar/pax written by libarchive, zstd-compressed when the name ends in ".zst"; deterministic
 * (mtime 0, uid/gid 0, mode 0644), so the same set always gives the same bytes.
 *
 * A detached signature FILE.minisig found beside a file of the set is packed as a member too
 * (listed in the manifest like any other): a member "X.minisig" is the signature of member X.
 *
 * Reading (verify and unpack) refuses, as InvalidFormat: a member X.minisig without a member X, a first member other than the
 * manifest, a malformed manifest, absolute paths, ".." or any '/' (members are plain file
 * names), links, devices, fifos, directories, sparse members, duplicate members; as
 * SchemaMismatch: a member the manifest does not list or a listed one that is absent; as
 * ChecksumMismatch: a size or SHA-256 that differs from the manifest. */
#ifndef FMT_BUNDLE_H
#define FMT_BUNDLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "fmt/crypto.h"
#include "fmt/err.h"

struct fmt_source;

#define FMT_BUNDLE_MANIFEST "MANIFEST.json"
#define FMT_BUNDLE_MANIFEST_MAX ((size_t)16 << 20) /* largest manifest read */
#define FMT_BUNDLE_MAX_MEMBERS 10000u

typedef struct fmt_bundle_member {
	char *name;                          /* plain file name */
	uint64_t size;
	char sha256[FMT_SHA256_HEX + 1];     /* lowercase hex */
	/* The format of its data (fmt_probe_stream: a driver's name, as of the file), once its data
	 * was read (verify, unpack); NULL when no driver recognises them. */
	const char *format;
} fmt_bundle_member;

/* A signature the bundle holds: a detached FILE.minisig member beside the member FILE it signs,
 * or (after a keyed check) the set's embedded Ed25519 signature, which the driver checked. */
typedef struct fmt_bundle_sig {
	size_t file;                         /* index in members of the file signed */
	size_t sig;                          /* index of the FILE.minisig member; SIZE_MAX when embedded */
	const char *kind;                    /* "minisig", or "ed25519" for the embedded one */
	char key_id[24];                     /* the key it was checked with; "" when not checked */
} fmt_bundle_sig;

/* What a bundle holds (filled by pack, verify and unpack; free with fmt_bundle_info_free). */
typedef struct fmt_bundle_info {
	fmt_bundle_sig *sigs;                /* the FILE.minisig members (each checked after a check
					      * with Ed25519 keys), then the set's embedded Ed25519
					      * signature when one was checked */
	size_t n_sigs;
	int keyed;                           /* checked with a key (fmt_bundle_check_signed, unpack) */
	char *format;                        /* the manifest's "format": a driver name */
	char *fmtkit;                        /* its "fmtkit": the packer's version; NULL when absent */
	fmt_bundle_member *members;          /* sorted by name; the manifest itself not included */
	size_t n_members;
	uint64_t total_bytes;                /* sum of the member sizes */
	int zstd;                            /* 1 if the bundle is zstd-compressed */
} fmt_bundle_info;

void fmt_bundle_info_free(fmt_bundle_info *b);

/* The signatures as the "signatures" member of a JSON report: [{"file", "kind", "signature"
 * (the FILE.minisig member; not for an embedded one), "checked", "key_id" and "trusted" when
 * checked}]. */
json_t *fmt_bundle_sigs_json(const fmt_bundle_info *b);
/* The same for a report line: ", .minisig of 3 members by trusted key ID" or ", .minisig of
 * 3 members (not checked: no key given)", then ", ed25519 signature by trusted key ID";
 * nothing without any. */
void fmt_bundle_sigs_text(const fmt_bundle_info *b, FILE *out);

/* The member a tool opens to get the whole set: the one whose name the manifest's format
 * answers to (the index, or the first GGUF shard: members are sorted), or NULL. */
const char *fmt_bundle_entry(const fmt_bundle_info *b);

/* 1 if path is to be read as a bundle: a tar ("ustar" at offset 257), or a zstd frame (28 B5 2F
 * FD) whose data begins a tar; a tar whose first member is not MANIFEST.json is then
 * InvalidFormat "a tar archive, not an fmtkit bundle: ..." (not "unrecognised format"). 0 for
 * anything else, including unreadable files. Reads only the first block. */
int fmt_bundle_probe(const char *path);
/* The same from the first n bytes of a stream, which cannot be read again to look inside a zstd
 * frame: a zstd frame is taken for a bundle (no other format fmtkit reads starts with one). */
int fmt_bundle_probe_head(const uint8_t *head, size_t n);
/* Standard input opened as a sequential source and its first bytes probed: *is_bundle says
 * whether they begin one (the bytes stay readable from the source). On failure src is closed. */
fmt_kind fmt_bundle_open_stdin(fmt_source *src, int *is_bundle, fmt_err *e);
/* Data no format reads (s, whose first n bytes are head), told for what it is when it is a tar
 * (fmt_unrecognised_fn, fmt/registry.h): InvalidFormat in e and 1 for a bundle ("an fmtkit
 * bundle ...", with what reads it) and for a tar that is none (the words reading it as a bundle
 * gives), and for gzip data ("a gzip-compressed file, which fmtkit does not read": bundles are
 * plain or zstd tars); 0 otherwise. Reads s from its start, at most until its first member header. */
int fmt_bundle_explain(struct fmt_source *s, const uint8_t *head, size_t n, fmt_err *e);

/* Pack the set that set_path opens (a single file, an index, a GGUF first shard: every file of
 * the set is a member) into bundle_path, atomically (FMT_SINK_FORCE overwrites). The files are
 * hashed, then written and hashed again: a file that changed meanwhile is ChecksumMismatch.
 * info may be NULL. */
fmt_kind fmt_bundle_pack(const char *set_path, const char *bundle_path, unsigned sink_flags,
			 fmt_bundle_info *info, fmt_err *e);

/* Check a bundle without writing anything: every rule above, each member hashed as it streams
 * by. Opens nothing but the bundle. info may be NULL. */
fmt_kind fmt_bundle_verify(const char *bundle_path, fmt_bundle_info *info, fmt_err *e);
/* The same from a stream (standard input: fmt_source_open_sequential), read front to back from
 * its first byte; the source stays open (the caller closes it). */
fmt_kind fmt_bundle_verify_stream(struct fmt_source *src, fmt_bundle_info *info, fmt_err *e);

struct fmt_verify_opts;

/* Extract into dir (created if missing, one level). Existing files of the same names are
 * refused (UsageError) before anything is written unless flags has FMT_SINK_FORCE. Every member
 * is written into a private staging directory made in dir (fmt/stagedir.h) and hashed as it is
 * written. With vo holding a key, the set is then verified there with it: first every
 * X.minisig member over X with the Ed25519 keys (a malformed one, or one above FMT_MS_FILE_MAX
 * bytes, InvalidFormat; a wrong one or one by an untrusted key SignatureInvalid; with an HMAC
 * key alone they are parsed but cannot be checked), then the set (a set whose entry has a
 * checked .minisig needs no embedded signature). Every member must be covered by a verified
 * signature: its own .minisig, or the embedded one of the set (the member that opens the set
 * and every file it opened); a .minisig member counts as covered; any other member is
 * SignatureInvalid, named in e->file. With vo->signed_elsewhere (the bundle's own FILE.minisig
 * was checked: it covers every member) and no HMAC key, only the .minisig members are checked.
 * info->sigs says what was checked. Only when all of that passed
 * are the members moved into place together; with FMT_SINK_FORCE existing files are replaced
 * by rename and all kept if a move fails; a directory in the way is refused. On any failure or
 * signal nothing is left behind and nothing that existed is changed (dir removed if this call
 * created it). vo may be NULL. A member whose destination is the bundle itself (device and
 * inode: a hard link too) is UsageError before anything is written, -f or not; so is one that
 * guard (when not NULL) refuses: the files the command read besides (its key files). */
typedef fmt_kind (*fmt_bundle_guard)(void *ctx, const char *dest, fmt_err *e);
fmt_kind fmt_bundle_unpack(const char *bundle_path, const char *dir, unsigned flags,
			   const struct fmt_verify_opts *vo, fmt_bundle_guard guard, void *guard_ctx,
			   fmt_bundle_info *info, fmt_err *e);

/* Verify the set inside a bundle with the key of vo, by the rules of fmt_bundle_unpack, in a
 * private directory made in $TMPDIR (or /tmp) and removed afterwards, also on signals. */
fmt_kind fmt_bundle_check_signed(const char *bundle_path, const struct fmt_verify_opts *vo,
				 fmt_bundle_info *info, fmt_err *e);
/* The same from a stream, as fmt_bundle_verify_stream. */
fmt_kind fmt_bundle_check_signed_stream(struct fmt_source *src, const struct fmt_verify_opts *vo,
					fmt_bundle_info *info, fmt_err *e);

#endif
