/* keygen --watermark: the seller's watermark key K (specs/watermark.md §1), 32 random bytes in
 * a 0600 file created like every other key file (fmt_key_file_create). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "fmt/out.h"
#include "sign.h"

#define WM_KEY_FILE "watermark.key"

int sign_cmd_keygen_watermark(const sign_opts *o)
{
	fmt_err e;
	char *path = NULL;
	uint8_t *key = NULL;
	fmt_err_clear(&e);
	fmt_kind k = o->seckey ? ((path = strdup(o->seckey)) ? FMT_OK : fmt_fail(&e, FMT_IO, "out of memory"))
			       : fmt_key_file_path(WM_KEY_FILE, &path, &e);
	if (k == FMT_OK && sodium_init() < 0)
		k = fmt_fail(&e, FMT_INTERNAL, "libsodium cannot be initialised");
	if (k == FMT_OK && !(key = sodium_malloc(32)))
		k = fmt_fail(&e, FMT_IO, "out of memory for the key");
	uint8_t digest[FMT_SHA256_LEN];
	char id[2 * FMT_SHA256_LEN + 1];
	fmt_json_rec rec = { 0 };
	if (k == FMT_OK) {
		randombytes_buf(key, 32);
		k = fmt_sha256_buf(key, 32, digest, &e);
	}
	if (k == FMT_OK)
		fmt_hex(digest, 8, id);
	if (k == FMT_OK && o->common.json) { /* before the file: out of memory leaves none */
		unsigned long since = fmt_json_memory_failures();
		json_t *r = json_pack("{s:b, s:s, s:s, s:o}", "ok", 1, "kind", "watermark", "key_id", id, "path",
				      fmt_json_string(path, strlen(path)));
		k = fmt_json_rec_make(&rec, r, since, &e);
		if (k != FMT_OK) { /* the operation's failure, not the key file's */
			sodium_free(key);
			free(path);
			return sign_fail(o, NULL, &e);
		}
	}
	if (k == FMT_OK)
		k = fmt_key_file_create(path, key, 32, o->force, 1, &e);
	sodium_free(key);
	if (k != FMT_OK) {
		fmt_json_rec_free(&rec);
		int code = sign_keygen_fail(o, path, &e);
		free(path);
		return code;
	}
	int status = 0;
	if (o->common.json) {
		status = sign_put_record(o, NULL, &rec);
	} else if (!o->common.quiet) {
		printf("created watermark key %s in ", id);
		fmt_out_escaped(stdout, path, strlen(path));
		printf("\n");
	}
	fmt_json_rec_free(&rec);
	free(path);
	return status;
}
