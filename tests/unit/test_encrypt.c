/* Dataset encryption primitives: the check vectors of specs/ald.md §5.2 (Argon2id) and §5.3
 * (HKDF-SHA256 ald-v1-encrypt), AES-256-GCM (the GCM specification's test case 14), X25519
 * (RFC 7748 §6.1), and the refusals. */
#include <stdlib.h>
#include <sodium.h>
#include <sys/stat.h>
#include "fmt/encrypt.h"
#include "unit.h"

static void unhex(const char *hex, uint8_t *out)
{
	CHECK(fmt_unhex(hex, strlen(hex), out, strlen(hex) / 2) == 0);
}

TEST(encrypt_argon2id_vector_5_2)
{
	uint8_t salt[16], key[32], want[32];
	char pw_text[] = "password";
	fmt_password pw = { (uint8_t *)pw_text, 8 };
	fmt_err e = { 0 };
	for (int i = 0; i < 16; i++)
		salt[i] = (uint8_t)i;
	unhex("39903a34cd393876436e671cd690dfe8ab9ce7b13459a7e04ec0e4f0694ddb0d", want);
	CHECK(fmt_argon2id_key(&pw, salt, key, &e) == FMT_OK);
	CHECK_MEM(key, want, 32);
}

TEST(encrypt_hkdf_vector_5_3)
{
	uint8_t ikm[32], out[32], want[32];
	fmt_err e = { 0 };
	memset(ikm, 0x01, sizeof ikm);
	unhex("a7280deb53817d5140e4b20754d7bba3103c75b3224015a55ed0be2e38b06de9", want);
	CHECK(fmt_hkdf_sha256(NULL, 0, ikm, 32, "ald-v1-encrypt", out, 32, &e) == FMT_OK);
	CHECK_MEM(out, want, 32);
	/* no salt is 32 zero bytes (RFC 5869 §2.2) */
	uint8_t zeros[32] = { 0 };
	CHECK(fmt_hkdf_sha256(zeros, 32, ikm, 32, "ald-v1-encrypt", out, 32, &e) == FMT_OK);
	CHECK_MEM(out, want, 32);
	CHECK(fmt_hkdf_sha256(NULL, 0, ikm, 32, "apr-v1-encrypt", out, 32, &e) == FMT_OK);
	CHECK(memcmp(out, want, 32) != 0);
}

TEST(encrypt_aes256gcm_test_case_14)
{
	uint8_t key[32] = { 0 }, nonce[12] = { 0 }, plain[16] = { 0 }, buf[16], tag[16], want_c[16], want_t[16];
	fmt_gcm g;
	fmt_err e = { 0 };
	unhex("cea7403d4d606b6e074ec5d3baf39d18", want_c);
	unhex("d0d1c8a799996bf0265b98b5d48ab919", want_t);
	CHECK(fmt_gcm_init(&g, key, nonce, 0, &e) == FMT_OK);
	CHECK(fmt_gcm_update(&g, plain, 16, buf, &e) == FMT_OK);
	CHECK(fmt_gcm_final(&g, tag, &e) == FMT_OK);
	fmt_gcm_free(&g);
	CHECK_MEM(buf, want_c, 16);
	CHECK_MEM(tag, want_t, 16);
	/* decrypt in place, in two steps */
	CHECK(fmt_gcm_init(&g, key, nonce, 1, &e) == FMT_OK);
	CHECK(fmt_gcm_update(&g, buf, 5, buf, &e) == FMT_OK);
	CHECK(fmt_gcm_update(&g, buf + 5, 11, buf + 5, &e) == FMT_OK);
	CHECK(fmt_gcm_final(&g, tag, &e) == FMT_OK);
	fmt_gcm_free(&g);
	CHECK_MEM(buf, plain, 16);
	/* a changed tag bit: DecryptionFailed */
	tag[15] ^= 1;
	CHECK(fmt_gcm_init(&g, key, nonce, 1, &e) == FMT_OK);
	CHECK(fmt_gcm_update(&g, want_c, 16, buf, &e) == FMT_OK);
	CHECK(fmt_gcm_final(&g, tag, &e) == FMT_DECRYPTION);
	fmt_gcm_free(&g);
}

TEST(encrypt_x25519_rfc7748)
{
	uint8_t a[32], b_pub[32], a_pub[32], shared[32], want[32], want_a_pub[32], zero[32] = { 0 };
	fmt_err e = { 0 };
	unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", a);
	unhex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a", want_a_pub);
	unhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f", b_pub);
	unhex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742", want);
	fmt_x25519_public_of(a, a_pub);
	CHECK_MEM(a_pub, want_a_pub, 32);
	CHECK(fmt_x25519_agree(a, b_pub, shared, &e) == FMT_OK);
	CHECK_MEM(shared, want, 32);
	CHECK(fmt_x25519_agree(a, zero, shared, &e) == FMT_DECRYPTION);
}

TEST(encrypt_identity_files)
{
	char *dir = unit_tmp_dir(), path[512];
	fmt_x25519_pair p, q;
	fmt_err e = { 0 };
	uint8_t *text;
	size_t n;
	uint8_t pk[32];
	CHECK(fmt_x25519_keygen(&p, &e) == FMT_OK);
	CHECK(fmt_x25519_secret_text(&p, &text, &n, &e) == FMT_OK);
	snprintf(path, sizeof path, "%s/id.key", dir);
	CHECK(fmt_key_file_create(path, text, n, 0, 1, &e) == FMT_OK);
	CHECK(fmt_x25519_secret_load(path, NULL, &q, &e) == FMT_OK);
	CHECK_MEM(q.sk, p.sk, 32);
	CHECK_MEM(q.pk, p.pk, 32);
	fmt_x25519_free(&q);
	chmod(path, 0640);
	CHECK(fmt_x25519_secret_load(path, NULL, &q, &e) == FMT_USAGE);
	CHECK(strstr(e.msg, "readable by others") != NULL);
	char *pub;
	CHECK(fmt_x25519_public_text(&p, &pub, &n, &e) == FMT_OK);
	snprintf(path, sizeof path, "%s/id.pub", dir);
	CHECK(fmt_key_file_create(path, pub, n, 0, 0, &e) == FMT_OK);
	CHECK(fmt_x25519_public_load(path, pk, &e) == FMT_OK);
	CHECK_MEM(pk, p.pk, 32);
	snprintf(path, sizeof path, "%s/missing.key", dir);
	CHECK(fmt_x25519_secret_load(path, NULL, &q, &e) == FMT_IO);
	free(pub);
	fmt_x25519_free(&p);
	sodium_free(text);
}

TEST(encrypt_identity_sealed)
{
	char *dir = unit_tmp_dir(), path[512];
	fmt_x25519_pair p, q;
	fmt_err e = { 0 };
	uint8_t *text;
	size_t n;
	fmt_pass_opts po = { .env = "UNIT_X25519_PW" }, none = { 0 };
	setenv("UNIT_X25519_PW", "right", 1);
	CHECK(fmt_x25519_keygen(&p, &e) == FMT_OK);
	CHECK(fmt_x25519_secret_seal(&p, &po, &text, &n, &e) == FMT_OK);
	CHECK(memmem(text, n, p.sk, 32) == NULL);
	snprintf(path, sizeof path, "%s/sealed.key", dir);
	CHECK(fmt_key_file_create(path, text, n, 0, 1, &e) == FMT_OK);
	CHECK(fmt_x25519_secret_load(path, &po, &q, &e) == FMT_OK);
	CHECK_MEM(q.sk, p.sk, 32);
	CHECK_MEM(q.pk, p.pk, 32);
	fmt_x25519_free(&q);
	CHECK(fmt_x25519_secret_load(path, &none, &q, &e) == FMT_USAGE);
	setenv("UNIT_X25519_PW", "wrong", 1);
	CHECK(fmt_x25519_secret_load(path, &po, &q, &e) == FMT_DECRYPTION);
	CHECK(q.sk == NULL);
	unsetenv("UNIT_X25519_PW");
	fmt_x25519_free(&p);
	sodium_free(text);
}

/* Licence dates (fmt-sign license --expires, fmt-inspect, fmt-verify's message). */
#include "fmt/dataset.h"
TEST(licence_utc_dates)
{
	uint64_t t = 0;
	char out[32];
	CHECK(fmt_parse_utc_date("2999-01-01", &t) == 0);
	CHECK_EQ_U64(t, 32472144000u);
	CHECK(fmt_parse_utc_date("2001-02-03T04:05:06Z", &t) == 0);
	CHECK_EQ_U64(t, 981173106u);
	fmt_format_utc(t, out);
	CHECK_STR(out, "2001-02-03T04:05:06Z");
	fmt_format_utc(0, out);
	CHECK_STR(out, "1970-01-01T00:00:00Z");
	CHECK(fmt_parse_utc_date("2027-13-01", &t) != 0);
	/* impossible days are refused, not moved on to the next month */
	CHECK(fmt_parse_utc_date("2027-02-30", &t) != 0);
	CHECK(fmt_parse_utc_date("2027-04-31", &t) != 0);
	CHECK(fmt_parse_utc_date("2027-02-29", &t) != 0);
	CHECK(fmt_parse_utc_date("2100-02-29", &t) != 0);
	CHECK(fmt_parse_utc_date("2027-01-01T23:59:60Z", &t) != 0);
	CHECK(fmt_parse_utc_date("2028-02-29", &t) == 0 && t == 1835395200u);
	CHECK(fmt_parse_utc_date("2000-02-29", &t) == 0 && t == 951782400u);
	CHECK(fmt_parse_utc_date("2027-01-01T00:00:00", &t) != 0); /* UTC only: the Z is required */
	CHECK(fmt_parse_utc_date("2027-01-01 ", &t) != 0);
	CHECK(fmt_parse_utc_date("1969-12-31", &t) != 0);
	CHECK(fmt_parse_utc_date("", &t) != 0);
}
