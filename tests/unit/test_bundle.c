/* Unit tests for libcommon/bundle/bundle.c: pack/verify/unpack round trips, determinism, the probe,
 * and hostile archives (made here with libarchive) refused with the right kind. */
#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/bundle.h"
#include "fmt/crypto.h"
#include "fmt/io.h"
#include "helpers.h"
#include "unit.h"

static int write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t put = fwrite(p, 1, n, f);
	return fclose(f) == 0 && put == n ? 0 : -1;
}

/* specs/safetensors.md §7: a 164-byte file with tensors a (F32 [2]) and b (F16 [2]). */
static int write_tiny_safetensors(const char *path)
{
	static const char header[] = "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
				     "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[8,12]}}     ";
	static const uint8_t data[] = { 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0x3c, 0, 0xc0 };
	uint8_t buf[256];
	size_t hl = sizeof header - 1, n = 0;
	memset(buf, 0, 8);
	buf[0] = (uint8_t)hl;
	n = 8;
	memcpy(buf + n, header, hl);
	n += hl;
	memcpy(buf + n, data, sizeof data);
	n += sizeof data;
	return write_bytes(path, buf, n);
}

/* ---- hostile archives ---- */

typedef struct tar_member {
	const char *name;
	unsigned type;          /* AE_IFREG, AE_IFLNK, ... */
	const char *data;       /* regular files */
	const char *link;       /* symlink target or hard link target */
	int hard;
} tar_member;

static void add_member(struct archive *a, const tar_member *m)
{
	struct archive_entry *ent = archive_entry_new();
	size_t n = m->data ? strlen(m->data) : 0;
	archive_entry_set_pathname(ent, m->name);
	archive_entry_set_filetype(ent, m->type);
	archive_entry_set_perm(ent, 0644);
	archive_entry_set_size(ent, (la_int64_t)n);
	if (m->link && m->hard)
		archive_entry_set_hardlink(ent, m->link);
	else if (m->link)
		archive_entry_set_symlink(ent, m->link);
	archive_write_header(a, ent);
	if (n)
		archive_write_data(a, m->data, n);
	archive_entry_free(ent);
}

static const char *const A_DATA = "first member\n", *const B_DATA = "second member\n";

/* MANIFEST.json for a.bin and b.bin (plus c.bin when extra). */
static void manifest_for(char *out, size_t cap, int extra)
{
	const char *names[3] = { "a.bin", "b.bin", "c.bin" }, *datas[3] = { A_DATA, B_DATA, "c" };
	size_t len = (size_t)snprintf(out, cap, "{\"files\":{");
	for (int i = 0; i < 2 + extra; i++) {
		uint8_t d[FMT_SHA256_LEN];
		char hex[FMT_SHA256_HEX + 1];
		fmt_err e = { 0 };
		fmt_sha256_buf(datas[i], strlen(datas[i]), d, &e);
		fmt_hex(d, sizeof d, hex);
		len += (size_t)snprintf(out + len, cap - len, "%s\"%s\":{\"sha256\":\"%s\",\"size\":%zu}", i ? "," : "",
					names[i], hex, strlen(datas[i]));
	}
	snprintf(out + len, cap - len, "},\"fmtkit\":\"0.1.0\",\"format\":\"safetensors\"}");
}

/* manifest first (unless NULL), a.bin, b.bin (b_data replaces b's bytes), then extra. */
static void make_tar(const char *path, const char *manifest, const char *b_data, const tar_member *extra)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_open_filename(a, path);
	if (manifest)
		add_member(a, &(tar_member){ FMT_BUNDLE_MANIFEST, AE_IFREG, manifest, NULL, 0 });
	add_member(a, &(tar_member){ "a.bin", AE_IFREG, A_DATA, NULL, 0 });
	add_member(a, &(tar_member){ "b.bin", AE_IFREG, b_data ? b_data : B_DATA, NULL, 0 });
	if (extra)
		add_member(a, extra);
	archive_write_close(a);
	archive_write_free(a);
}

/* verify gives want; unpack gives want and leaves out/ empty. */
static void expect_refused(const char *dir, const char *tar, fmt_kind want, const char *msg_part)
{
	char out[512];
	fmt_err e;
	fmt_err_clear(&e);
	CHECK_EQ_U64(fmt_bundle_verify(tar, NULL, &e), want);
	if (msg_part && !strstr(e.msg, msg_part))
		CHECK_STR(e.msg, msg_part);
	snprintf(out, sizeof out, "%s/out", dir);
	mkdir(out, 0755);
	fmt_err_clear(&e);
	CHECK_EQ_U64(fmt_bundle_unpack(tar, out, 0, NULL, NULL, NULL, NULL, &e), want);
	CHECK_EQ_U64(unit_dir_entries(out), 0);
	rmdir(out);
}

TEST(bundle_round_trip_and_determinism)
{
	char *dir = unit_tmp_dir(), model[256], tar1[256], tar2[256], zst[256], out[256], back[256];
	fmt_bundle_info info;
	fmt_err e;
	fmt_err_clear(&e);
	CHECK(dir != NULL);
	snprintf(model, sizeof model, "%s/tiny.safetensors", dir);
	snprintf(tar1, sizeof tar1, "%s/one.tar", dir);
	snprintf(tar2, sizeof tar2, "%s/two.tar", dir);
	snprintf(zst, sizeof zst, "%s/one.tar.zst", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	snprintf(back, sizeof back, "%s/out/tiny.safetensors", dir);
	CHECK(write_tiny_safetensors(model) == 0);
	CHECK_EQ_U64(fmt_bundle_pack(model, tar1, 0, &info, &e), FMT_OK);
	CHECK_EQ_U64(info.n_members, 1);
	CHECK_STR(info.members[0].name, "tiny.safetensors");
	CHECK_EQ_U64(info.members[0].size, 164);
	CHECK_STR(info.format, "safetensors");
	fmt_bundle_info_free(&info);
	CHECK_EQ_U64(fmt_bundle_pack(model, tar1, 0, NULL, &e), FMT_USAGE); /* exists */
	CHECK_EQ_U64(fmt_bundle_pack(model, tar2, 0, NULL, &e), FMT_OK);
	char *x = NULL, *y = NULL;
	size_t nx = 0, ny = 0;
	CHECK_EQ_U64(fmt_read_file(tar1, 1 << 20, &x, &nx, &e), FMT_OK);
	CHECK_EQ_U64(fmt_read_file(tar2, 1 << 20, &y, &ny, &e), FMT_OK);
	CHECK(x && y && nx == ny && memcmp(x, y, nx) == 0);
	free(x);
	free(y);
	CHECK_EQ_U64(fmt_bundle_pack(model, zst, 0, NULL, &e), FMT_OK);
	CHECK_EQ_U64(fmt_bundle_probe(tar1), 1);
	CHECK_EQ_U64(fmt_bundle_probe(zst), 1);
	CHECK_EQ_U64(fmt_bundle_probe(model), 0);
	CHECK_EQ_U64(fmt_bundle_probe("/nonexistent/x.tar"), 0);
	CHECK_EQ_U64(fmt_bundle_verify(zst, &info, &e), FMT_OK);
	CHECK_EQ_U64(info.zstd, 1);
	CHECK_EQ_U64(info.total_bytes, 164);
	fmt_bundle_info_free(&info);
	/* from a stream: told by its head, read in short reads front to back */
	CHECK_EQ_U64(fmt_read_file(tar1, 1 << 20, &x, &nx, &e), FMT_OK);
	CHECK_EQ_U64(fmt_bundle_probe_head((const uint8_t *)x, nx), 1);
	CHECK_EQ_U64(fmt_bundle_probe_head((const uint8_t *)x, 511), 0);
	CHECK_EQ_U64(fmt_bundle_probe_head((const uint8_t *)"\x28\xb5\x2f\xfd", 4), 1);
	fmt_source stream;
	CHECK_EQ_U64(fmt_source_stream_memory(&stream, "-", x, nx, 512, 100, &e), FMT_OK);
	CHECK_EQ_U64(fmt_bundle_verify_stream(&stream, &info, &e), FMT_OK);
	CHECK_EQ_U64(info.total_bytes, 164);
	fmt_bundle_info_free(&info);
	fmt_source_close(&stream);
	x[1536 + 10] ^= 1; /* in the model's data: after the manifest and the model's header */
	CHECK_EQ_U64(fmt_source_stream_memory(&stream, "-", x, nx, 512, 100, &e), FMT_OK);
	CHECK_EQ_U64(fmt_bundle_verify_stream(&stream, NULL, &e), FMT_CHECKSUM);
	fmt_source_close(&stream);
	free(x);
	CHECK_EQ_U64(fmt_bundle_unpack(zst, out, 0, NULL, NULL, NULL, NULL, &e), FMT_OK);
	CHECK(fmt_read_file(back, 1 << 20, &x, &nx, &e) == FMT_OK && nx == 164);
	free(x);
	CHECK_EQ_U64(fmt_bundle_unpack(tar1, out, 0, NULL, NULL, NULL, NULL, &e), FMT_USAGE);
	CHECK_EQ_U64(fmt_bundle_unpack(tar1, out, FMT_SINK_FORCE, NULL, NULL, NULL, NULL, &e), FMT_OK);
	CHECK_EQ_U64(unit_dir_entries(out), 1);
	unit_rm_dir(dir);
}

TEST(bundle_hostile_members)
{
	char *dir = unit_tmp_dir(), tar[256], manifest[1024], extra_manifest[1024];
	CHECK(dir != NULL);
	snprintf(tar, sizeof tar, "%s/b.tar", dir);
	manifest_for(manifest, sizeof manifest, 0);
	manifest_for(extra_manifest, sizeof extra_manifest, 1);
	fmt_err e = { 0 };
	make_tar(tar, manifest, NULL, NULL);
	CHECK_EQ_U64(fmt_bundle_verify(tar, NULL, &e), FMT_OK);
	CHECK_EQ_U64(fmt_bundle_probe(tar), 1);

	const struct { tar_member m; fmt_kind want; const char *msg; } cases[] = {
		{ { "/etc/evil", AE_IFREG, "x", NULL, 0 }, FMT_INVALID_FORMAT, "absolute path" },
		{ { "../evil", AE_IFREG, "x", NULL, 0 }, FMT_INVALID_FORMAT, "'..' component" },
		{ { "a/../../evil", AE_IFREG, "x", NULL, 0 }, FMT_INVALID_FORMAT, "'..' component" },
		{ { "sub/evil", AE_IFREG, "x", NULL, 0 }, FMT_INVALID_FORMAT, "plain file names" },
		{ { "link", AE_IFLNK, NULL, "/etc/passwd", 0 }, FMT_INVALID_FORMAT, "symbolic link" },
		{ { "hard", AE_IFREG, NULL, "a.bin", 1 }, FMT_INVALID_FORMAT, "hard link" },
		{ { "dev", AE_IFCHR, NULL, NULL, 0 }, FMT_INVALID_FORMAT, "device" },
		{ { "blk", AE_IFBLK, NULL, NULL, 0 }, FMT_INVALID_FORMAT, "device" },
		{ { "fifo", AE_IFIFO, NULL, NULL, 0 }, FMT_INVALID_FORMAT, "FIFO" },
		{ { "dir", AE_IFDIR, NULL, NULL, 0 }, FMT_INVALID_FORMAT, "directory" },
		{ { "a.bin", AE_IFREG, "first member\n", NULL, 0 }, FMT_INVALID_FORMAT, "duplicate member" },
		{ { FMT_BUNDLE_MANIFEST, AE_IFREG, "{}", NULL, 0 }, FMT_INVALID_FORMAT, "duplicate member" },
		{ { "c.bin", AE_IFREG, "c", NULL, 0 }, FMT_SCHEMA, "not listed" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		make_tar(tar, manifest, NULL, &cases[i].m);
		expect_refused(dir, tar, cases[i].want, cases[i].msg);
	}
	make_tar(tar, extra_manifest, NULL, NULL);
	expect_refused(dir, tar, FMT_SCHEMA, "has no such member");
	make_tar(tar, manifest, "second memBer\n", NULL);
	expect_refused(dir, tar, FMT_CHECKSUM, "SHA-256");
	make_tar(tar, manifest, "second member!\n", NULL);
	expect_refused(dir, tar, FMT_CHECKSUM, "bytes");
	/* a tar without the manifest first: read as a bundle (the probe takes any tar), which says
	 * what it is */
	make_tar(tar, NULL, NULL, NULL);
	expect_refused(dir, tar, FMT_INVALID_FORMAT, "a tar archive, not an fmtkit bundle: its first member is 'a.bin', not MANIFEST.json");
	CHECK_EQ_U64(fmt_bundle_probe(tar), 1);
	size_t n = 0;
	uint8_t *head = unit_read_file(tar, 512, &n);
	CHECK(head != NULL && n == 512);
	if (head) {
		CHECK_EQ_U64(fmt_bundle_probe_head(head, n), 1);
		CHECK_EQ_U64(fmt_bundle_probe_head(head, 511), 0);
		head[148] ^= 1; /* its header checksum wrong: "ustar" at 257 alone is not a tar */
		CHECK_EQ_U64(fmt_bundle_probe_head(head, n), 0);
	}
	free(head);
	unit_rm_dir(dir);
}

TEST(bundle_malformed_manifests)
{
	char *dir = unit_tmp_dir(), tar[256];
	CHECK(dir != NULL);
	snprintf(tar, sizeof tar, "%s/b.tar", dir);
	static const char *const bad[] = {
		"not json",
		"[]",
		"{\"format\":\"x\"}",
		"{\"files\":[],\"format\":\"x\"}",
		"{\"files\":{},\"format\":1}",
		"{\"files\":{\"a.bin\":{\"sha256\":\"00\",\"size\":1}},\"format\":\"x\"}",
		"{\"files\":{\"a.bin\":{\"sha256\":\"ABCDEF0000000000000000000000000000000000000000000000000000000000\",\"size\":1}},\"format\":\"x\"}",
		"{\"files\":{\"a.bin\":{\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"size\":-1}},\"format\":\"x\"}",
		"{\"files\":{\"../a.bin\":{\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"size\":1}},\"format\":\"x\"}",
		"{\"files\":{\"MANIFEST.json\":{\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"size\":1}},\"format\":\"x\"}",
		"{\"files\":{},\"files\":{},\"format\":\"x\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		make_tar(tar, bad[i], NULL, NULL);
		expect_refused(dir, tar, FMT_INVALID_FORMAT, NULL);
	}
	/* not an archive at all; an empty file; a directory */
	CHECK(write_bytes(tar, "hello", 5) == 0);
	expect_refused(dir, tar, FMT_INVALID_FORMAT, NULL);
	CHECK(write_bytes(tar, "", 0) == 0);
	expect_refused(dir, tar, FMT_INVALID_FORMAT, NULL);
	fmt_err e = { 0 };
	CHECK_EQ_U64(fmt_bundle_verify(dir, NULL, &e), FMT_IO);
	CHECK_EQ_U64(fmt_bundle_verify("/nonexistent/b.tar", NULL, &e), FMT_IO);
	unit_rm_dir(dir);
}
