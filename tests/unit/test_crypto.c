/* libcommon/crypto: SHA-256, HMAC-SHA256, hex, the per-user key and shared secrets. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/crypto.h"
#include "unit.h"

static void sha_hex(const void *data, size_t n, char out[FMT_SHA256_HEX + 1])
{
	uint8_t d[FMT_SHA256_LEN];
	fmt_err e;
	fmt_err_clear(&e);
	CHECK(fmt_sha256_buf(data, n, d, &e) == FMT_OK);
	fmt_hex(d, sizeof d, out);
}

static void hmac_hex(const void *key, size_t key_len, const char *msg, char out[FMT_SHA256_HEX + 1])
{
	uint8_t mac[FMT_SHA256_LEN];
	fmt_hmac_sha256(key, key_len, msg, strlen(msg), mac);
	fmt_hex(mac, sizeof mac, out);
}

static void write_file(const char *path, const void *data, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, data, n) == (ssize_t)n);
	close(fd);
	chmod(path, mode);
}

TEST(crypto_sha256_vectors)
{
	char hex[FMT_SHA256_HEX + 1];
	sha_hex("abc", 3, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha_hex("", 0, hex);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* streaming in pieces equals one shot */
	fmt_sha256 h;
	fmt_err e;
	uint8_t d[FMT_SHA256_LEN];
	fmt_err_clear(&e);
	CHECK(fmt_sha256_init(&h, &e) == FMT_OK);
	CHECK(fmt_sha256_update(&h, "a", 1, &e) == FMT_OK);
	CHECK(fmt_sha256_update(&h, "", 0, &e) == FMT_OK);
	CHECK(fmt_sha256_update(&h, "bc", 2, &e) == FMT_OK);
	CHECK(fmt_sha256_final(&h, d, &e) == FMT_OK);
	fmt_sha256_free(&h);
	fmt_sha256_free(&h); /* idempotent */
	fmt_hex(d, sizeof d, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* 1 MiB + 3 of 'a' through a file source (pread in chunks) against the one-shot digest. */
TEST(crypto_sha256_source)
{
	size_t n = (1u << 20) + 3;
	char *data = malloc(n);
	CHECK(data != NULL);
	if (!data)
		return;
	memset(data, 'a', n);
	char path[] = "/tmp/fmt-crypto-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, data, n) == (ssize_t)n);
	close(fd);
	char want[FMT_SHA256_HEX + 1], got[FMT_SHA256_HEX + 1], want_mid[FMT_SHA256_HEX + 1];
	sha_hex(data, 1u << 20, want);
	CHECK_STR(want, "9bc1b2a288b26af7257a36277ae3816a7d4f16e89c1e7e77d0a5c48bad62b360");
	sha_hex(data + 1, n - 2, want_mid);
	fmt_source s;
	fmt_sha256 h;
	fmt_err e;
	uint8_t d[FMT_SHA256_LEN];
	fmt_err_clear(&e);
	CHECK(fmt_source_open(&s, path, &e) == FMT_OK);
	CHECK(fmt_sha256_init(&h, &e) == FMT_OK);
	CHECK(fmt_sha256_source(&h, &s, 0, 1u << 20, &e) == FMT_OK);
	CHECK(fmt_sha256_final(&h, d, &e) == FMT_OK);
	fmt_sha256_free(&h);
	fmt_hex(d, sizeof d, got);
	CHECK_STR(got, want);
	/* a range that starts and ends inside the file */
	CHECK(fmt_sha256_init(&h, &e) == FMT_OK);
	CHECK(fmt_sha256_source(&h, &s, 1, n - 2, &e) == FMT_OK);
	CHECK(fmt_sha256_final(&h, d, &e) == FMT_OK);
	fmt_sha256_free(&h);
	fmt_hex(d, sizeof d, got);
	CHECK_STR(got, want_mid);
	/* past the end: an error, not a crash */
	CHECK(fmt_sha256_init(&h, &e) == FMT_OK);
	CHECK(fmt_sha256_source(&h, &s, 4, n, &e) != FMT_OK);
	fmt_sha256_free(&h);
	fmt_source_close(&s);
	unlink(path);
	free(data);
}

TEST(crypto_hex_round_trip)
{
	uint8_t bytes[256], back[256];
	char hex[513];
	for (int i = 0; i < 256; i++)
		bytes[i] = (uint8_t)i;
	fmt_hex(bytes, sizeof bytes, hex);
	CHECK_EQ_U64(strlen(hex), 512);
	CHECK(strncmp(hex, "000102", 6) == 0);
	CHECK(strcmp(hex + 506, "fdfeff") == 0);
	CHECK(fmt_unhex(hex, 512, back, sizeof back) == 0);
	CHECK_MEM(back, bytes, sizeof bytes);
	CHECK(fmt_unhex("0A", 2, back, 1) != 0);  /* uppercase refused */
	CHECK(fmt_unhex("0g", 2, back, 1) != 0);
	CHECK(fmt_unhex("0a0", 3, back, 1) != 0); /* wrong length */
	CHECK(fmt_unhex("0a", 2, back, 2) != 0);
}

TEST(crypto_hmac_rfc4231)
{
	char hex[FMT_SHA256_HEX + 1];
	uint8_t key[131];
	memset(key, 0x0b, 20);
	hmac_hex(key, 20, "Hi There", hex);
	CHECK_STR(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	hmac_hex("Jefe", 4, "what do ya want for nothing?", hex);
	CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(key, 0xaa, sizeof key);
	hmac_hex(key, sizeof key, "Test Using Larger Than Block-Size Key - Hash Key First", hex);
	CHECK_STR(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(crypto_hmac_apsim_worked_example)
{
	char hex[FMT_SHA256_HEX + 1];
	hmac_hex("team secret", 11,
		 "APSI-SIG/1\ncount 1\n1 de62918515ac057f52f228fd1902cb2e978d097059f89a33556a482517639801\n",
		 hex);
	CHECK_STR(hex, "2052cecf757e0445b4134a311fc64e9bb84714f2c701a1d69a58b574596df9cf");
}

TEST(crypto_ct_equal)
{
	CHECK(fmt_ct_equal("abcd", "abcd", 4));
	CHECK(!fmt_ct_equal("abcd", "abce", 4));
	CHECK(fmt_ct_equal("x", "y", 0));
}

/* A fresh XDG_CONFIG_HOME; the previous value is restored by config_end. */
static char config_dir[64];
static char *saved_xdg;

static void config_begin(void)
{
	const char *old = getenv("XDG_CONFIG_HOME");
	saved_xdg = old ? strdup(old) : NULL;
	strcpy(config_dir, "/tmp/fmt-crypto-cfg-XXXXXX");
	CHECK(mkdtemp(config_dir) != NULL);
	setenv("XDG_CONFIG_HOME", config_dir, 1);
}

static void config_end(void)
{
	char p[256];
	const char *names[] = { "hmac.key", "hmac.key.old", "secret", "" };
	for (int i = 0; names[i][0]; i++) {
		snprintf(p, sizeof p, "%s/fmtkit/%s", config_dir, names[i]);
		unlink(p);
	}
	snprintf(p, sizeof p, "%s/fmtkit", config_dir);
	rmdir(p);
	rmdir(config_dir);
	if (saved_xdg)
		setenv("XDG_CONFIG_HOME", saved_xdg, 1);
	else
		unsetenv("XDG_CONFIG_HOME");
	free(saved_xdg);
	saved_xdg = NULL;
}

TEST(crypto_key_path)
{
	char *path = NULL, want[256];
	fmt_err e;
	char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	config_begin();
	fmt_err_clear(&e);
	CHECK(fmt_hmac_key_path(&path, &e) == FMT_OK);
	snprintf(want, sizeof want, "%s/fmtkit/hmac.key", config_dir);
	CHECK_STR(path, want);
	free(path);
	unsetenv("XDG_CONFIG_HOME");
	setenv("HOME", "/home/someone", 1);
	CHECK(fmt_hmac_key_path(&path, &e) == FMT_OK);
	CHECK_STR(path, "/home/someone/.config/fmtkit/hmac.key");
	free(path);
	unsetenv("HOME");
	CHECK(fmt_hmac_key_path(&path, &e) == FMT_USAGE);
	CHECK(path == NULL);
	if (saved_home)
		setenv("HOME", saved_home, 1);
	free(saved_home);
	config_end();
}

TEST(crypto_keygen_and_rotate)
{
	char *path = NULL, old_path[256];
	fmt_hmac_key k1, k2, loaded;
	fmt_err e;
	struct stat st;
	config_begin();
	fmt_err_clear(&e);
	CHECK(fmt_hmac_key_path(&path, &e) == FMT_OK);
	CHECK(fmt_hmac_keygen(path, 0, &k1, &e) == FMT_OK);
	CHECK_EQ_U64(k1.len, 32);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_size == 32);
	char dir[256];
	snprintf(dir, sizeof dir, "%s/fmtkit", config_dir);
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0700);
	/* the id: 16 lowercase hex digits, the start of SHA-256(K) */
	char full[FMT_SHA256_HEX + 1];
	sha_hex(k1.bytes, k1.len, full);
	CHECK_EQ_U64(strlen(k1.id), 16);
	CHECK(strncmp(k1.id, full, 16) == 0);
	/* load gives the same key and id */
	CHECK(fmt_hmac_key_load(path, &loaded, &e) == FMT_OK);
	CHECK(loaded.len == 32 && memcmp(loaded.bytes, k1.bytes, 32) == 0);
	CHECK_STR(loaded.id, k1.id);
	fmt_hmac_key_free(&loaded);
	/* without rotate an existing key is refused and left alone */
	fmt_err_clear(&e);
	CHECK(fmt_hmac_keygen(path, 0, &k2, &e) == FMT_USAGE);
	CHECK(k2.bytes == NULL);
	CHECK(strstr(e.msg, "already exists") != NULL);
	CHECK(fmt_hmac_key_load(path, &loaded, &e) == FMT_OK);
	CHECK_STR(loaded.id, k1.id);
	fmt_hmac_key_free(&loaded);
	/* rotate: the old key moves to hmac.key.old, twice (an older .old is replaced) */
	for (int round = 0; round < 2; round++) {
		fmt_err_clear(&e);
		CHECK(fmt_hmac_keygen(path, 1, &k2, &e) == FMT_OK);
		CHECK(strcmp(k2.id, k1.id) != 0);
		snprintf(old_path, sizeof old_path, "%s.old", path);
		CHECK(fmt_hmac_key_load(old_path, &loaded, &e) == FMT_OK);
		CHECK(loaded.len == 32 && memcmp(loaded.bytes, k1.bytes, 32) == 0);
		fmt_hmac_key_free(&loaded);
		CHECK(fmt_hmac_key_load(path, &loaded, &e) == FMT_OK);
		CHECK_STR(loaded.id, k2.id);
		fmt_hmac_key_free(&loaded);
		fmt_hmac_key_free(&k1);
		k1 = k2;
	}
	fmt_hmac_key_free(&k1);
	CHECK(k1.bytes == NULL);
	free(path);
	config_end();
}

TEST(crypto_key_load_refusals)
{
	char path[256];
	fmt_hmac_key k;
	fmt_err e;
	uint8_t bytes[33] = { 0 };
	config_begin();
	snprintf(path, sizeof path, "%s/fmtkit", config_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof path, "%s/fmtkit/hmac.key", config_dir);
	fmt_err_clear(&e);
	CHECK(fmt_hmac_key_load(path, &k, &e) == FMT_IO); /* missing: cannot open */
	CHECK(strstr(e.msg, "fmt-sign keygen --hmac") != NULL);
	write_file(path, bytes, 32, 0644);
	fmt_err_clear(&e);
	CHECK(fmt_hmac_key_load(path, &k, &e) == FMT_USAGE);
	CHECK_STR(e.msg, "hmac.key is readable by others (mode 0644); chmod 600 it");
	CHECK_STR(e.file, path);
	CHECK(k.bytes == NULL);
	write_file(path, bytes, 31, 0600);
	fmt_err_clear(&e);
	CHECK(fmt_hmac_key_load(path, &k, &e) == FMT_INVALID_FORMAT);
	write_file(path, bytes, 33, 0600);
	CHECK(fmt_hmac_key_load(path, &k, &e) == FMT_INVALID_FORMAT);
	write_file(path, bytes, 32, 0600);
	CHECK(fmt_hmac_key_load(path, &k, &e) == FMT_OK);
	fmt_hmac_key_free(&k);
	config_end();
}

static void check_secret_file(const char *path, const char *content, const char *want)
{
	fmt_hmac_key k;
	fmt_err e;
	fmt_err_clear(&e);
	write_file(path, content, strlen(content), 0600);
	CHECK(fmt_secret_from_file(path, &k, &e) == FMT_OK);
	CHECK_EQ_U64(k.len, strlen(want));
	CHECK(k.bytes && memcmp(k.bytes, want, k.len) == 0);
	CHECK_STR(k.id, "shared");
	fmt_hmac_key_free(&k);
}

TEST(crypto_secret_file)
{
	char path[256];
	fmt_hmac_key k;
	fmt_err e = { 0 };
	config_begin();
	snprintf(path, sizeof path, "%s/fmtkit", config_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof path, "%s/fmtkit/secret", config_dir);
	check_secret_file(path, "team secret\n", "team secret");
	check_secret_file(path, "team secret\r\n", "team secret");
	check_secret_file(path, "team secret", "team secret");
	check_secret_file(path, "team secret\n\n", "team secret\n"); /* only one newline */
	check_secret_file(path, " spaces kept \n", " spaces kept ");
	fmt_err_clear(&e);
	write_file(path, "\n", 1, 0600);
	CHECK(fmt_secret_from_file(path, &k, &e) == FMT_USAGE);
	write_file(path, "", 0, 0600);
	CHECK(fmt_secret_from_file(path, &k, &e) == FMT_USAGE);
	CHECK(k.bytes == NULL);
	unlink(path);
	/* a file that cannot be opened: IoError (exit 3), as every file */
	CHECK(fmt_secret_from_file(path, &k, &e) == FMT_IO);
	config_end();
}

TEST(crypto_secret_env_and_opts)
{
	fmt_hmac_key k;
	fmt_err e;
	fmt_err_clear(&e);
	setenv("FMT_TEST_SECRET", "team secret", 1);
	CHECK(fmt_secret_from_env("FMT_TEST_SECRET", &k, &e) == FMT_OK);
	CHECK(k.len == 11 && memcmp(k.bytes, "team secret", 11) == 0);
	CHECK_STR(k.id, "shared");
	fmt_hmac_key_free(&k);
	setenv("FMT_TEST_SECRET", "", 1);
	CHECK(fmt_secret_from_env("FMT_TEST_SECRET", &k, &e) == FMT_USAGE);
	unsetenv("FMT_TEST_SECRET");
	CHECK(fmt_secret_from_env("FMT_TEST_SECRET", &k, &e) == FMT_USAGE);
	CHECK(fmt_secret_from_env("", &k, &e) == FMT_USAGE);

	fmt_key_opts o = { 0 };
	CHECK(!fmt_key_opts_given(&o));
	o.secret_env = "FMT_TEST_SECRET";
	CHECK(fmt_key_opts_given(&o));
	setenv("FMT_TEST_SECRET", "s3", 1);
	CHECK(fmt_key_from_opts(&o, &k, &e) == FMT_OK);
	CHECK(k.len == 2 && memcmp(k.bytes, "s3", 2) == 0);
	fmt_hmac_key_free(&k);
	o.hmac_key = 1;
	fmt_err_clear(&e);
	CHECK(fmt_key_from_opts(&o, &k, &e) == FMT_USAGE);
	CHECK_STR(e.msg, "give only one of --hmac-key, --secret-file, --secret-env, --secret-prompt");
	unsetenv("FMT_TEST_SECRET");
}
