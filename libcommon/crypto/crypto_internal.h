/* Helpers shared by the files of libcommon/crypto (not part of the public API). */
#ifndef FMT_CRYPTO_INTERNAL_H
#define FMT_CRYPTO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "fmt/crypto.h"

/* sodium_init, once per process in effect (libsodium makes repeated calls cheap). */
fmt_kind fmt_crypto_sodium_init(fmt_err *e);

/* A key of len bytes in fresh sodium_malloc memory (the bytes left for the caller to fill);
 * id is set to "shared". */
fmt_kind fmt_crypto_key_alloc(size_t len, fmt_hmac_key *out, fmt_err *e);

/* Remove one trailing "\n" or "\r\n" from a secret of *len bytes. */
void fmt_crypto_strip_newline(const uint8_t *bytes, size_t *len);

/* The key id of a per-user key: the first 16 hex digits of SHA-256(K). */
fmt_kind fmt_crypto_user_key_id(fmt_hmac_key *k, fmt_err *e);

/* The directories fmt_crypto_make_key_dir made, shallowest first (each malloc'd), each removed
 * on a signal (fmt_tmp_track_dir) until fmt_crypto_key_dirs_done. */
typedef struct fmt_key_dirs {
	char **path;
	size_t n;
} fmt_key_dirs;

/* mkdir -p of the directory part of path; directories it creates are 0700, kept in *made (also
 * when it fails later; fmt_crypto_key_dirs_done it in any case). */
fmt_kind fmt_crypto_make_key_dir(const char *path, fmt_key_dirs *made, fmt_err *e);
/* Undo fmt_crypto_make_key_dir: rmdir the directories it made, the deepest first; a directory
 * that is not empty stays, and what is above it. */
void fmt_crypto_remove_key_dir(const fmt_key_dirs *made);
/* Stop tracking them for a signal and free the list (the directories stay). */
void fmt_crypto_key_dirs_done(fmt_key_dirs *made);

/* Rename an existing regular file path to path.old (replacing an older one); *old_path is its
 * new name (malloc'd), or NULL when there was none. */
fmt_kind fmt_crypto_keep_old_key(const char *path, char **old_path, fmt_err *e);

#endif
