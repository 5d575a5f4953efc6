/* libcommon/crypto/minisign.c: minisign's key and signature formats, byte for byte. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/crypto.h"
#include "fmt/minisign.h"
#include "unit.h"

/* A minisign 0.11 key pair made with `minisign -G -W`, and its signature of the 3 bytes "hi\n"
 * (`minisign -S`, prehashed) and a legacy one (`minisign -S -l`). */
static const char ms_pub[] =
	"untrusted comment: minisign public key D2ACAB9B450CB905\n"
	"RWQFuQxFm6us0lW1tSZwrUyiJBJWEgI/6kdfblC9N9xY176aLzQKoMYC\n";

TEST(minisign_key_id_is_little_endian_uppercase_hex)
{
	const uint8_t keynum[8] = { 0x05, 0xb9, 0x0c, 0x45, 0x9b, 0xab, 0xac, 0xd2 };
	char id[FMT_MS_KEY_ID_HEX];
	fmt_ms_key_id(keynum, id);
	CHECK_STR(id, "D2ACAB9B450CB905");
}

TEST(minisign_public_key_parse)
{
	fmt_ms_public pub;
	fmt_err e;
	char id[FMT_MS_KEY_ID_HEX];
	fmt_err_clear(&e);
	CHECK(fmt_ms_public_parse(ms_pub, strlen(ms_pub), 0, &pub, &e) == FMT_OK);
	fmt_ms_key_id(pub.keynum, id);
	CHECK_STR(id, "D2ACAB9B450CB905");
	/* the bare base64 line (-P) */
	const char *b64 = "RWQFuQxFm6us0lW1tSZwrUyiJBJWEgI/6kdfblC9N9xY176aLzQKoMYC";
	CHECK(fmt_ms_public_parse(b64, strlen(b64), 1, &pub, &e) == FMT_OK);
	/* a changed padding-free character, a short line, no comment line, a third line */
	const char *bad[] = {
		"RWQFuQxFm6us0lW1tSZwrUyiJBJWEgI/6kdfblC9N9xY176aLzQKoMY",
		"RWQFuQxFm6us0lW1tSZwrUyiJBJWEgI/6kdfblC9N9xY176aLzQKoMYC=",
		"RUQFuQxFm6us0lW1tSZwrUyiJBJWEgI/6kdfblC9N9xY176aLzQKoMYC", /* "ED": not a key */
		"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		fmt_err_clear(&e);
		CHECK(fmt_ms_public_parse(bad[i], strlen(bad[i]), 1, &pub, &e) == FMT_INVALID_FORMAT);
	}
	const char *no_comment = "RWQFuQxFm6us0lW1tSZwrUyiJBJWEgI/6kdfblC9N9xY176aLzQKoMYC\n";
	CHECK(fmt_ms_public_parse(no_comment, strlen(no_comment), 0, &pub, &e) == FMT_INVALID_FORMAT);
	char three[256];
	snprintf(three, sizeof three, "%sextra\n", ms_pub);
	CHECK(fmt_ms_public_parse(three, strlen(three), 0, &pub, &e) == FMT_INVALID_FORMAT);
}

/* Key pair -> files -> parse back -> sign -> parse the signature -> verify over a file. */
TEST(minisign_round_trip_unencrypted)
{
	fmt_ms_public pub, pub2;
	fmt_ms_secret sec, sec2;
	fmt_err e;
	char *pub_text, *sig_text;
	uint8_t *sec_text;
	size_t pub_len, sec_len, sig_len, which = 9;
	fmt_err_clear(&e);
	CHECK(fmt_ms_keygen(&pub, &sec, &e) == FMT_OK);
	CHECK(fmt_ms_public_text(&pub, &pub_text, &pub_len, &e) == FMT_OK);
	CHECK(fmt_ms_public_parse(pub_text, pub_len, 0, &pub2, &e) == FMT_OK);
	CHECK(memcmp(&pub, &pub2, sizeof pub) == 0);
	CHECK(fmt_ms_secret_text(&sec, NULL, 0, &sec_text, &sec_len, &e) == FMT_OK);
	CHECK(fmt_ms_secret_encrypted(sec_text, sec_len) == 0);
	CHECK(fmt_ms_secret_parse(sec_text, sec_len, NULL, 0, &sec2, &e) == FMT_OK);
	CHECK(memcmp(sec.keynum, sec2.keynum, 8) == 0 && memcmp(sec.sk, sec2.sk, FMT_MS_SK) == 0);

	char path[] = "/tmp/fmt-unit-minisign-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, "hi\n", 3) == 3);
	close(fd);
	uint8_t hash[FMT_MS_HASH];
	CHECK(fmt_ms_hash_file(path, hash, &e) == FMT_OK);
	CHECK(fmt_ms_sign(&sec2, hash, "timestamp:1\tfile:x\thashed", &sig_text, &sig_len, &e) == FMT_OK);
	fmt_ms_sig *sig = malloc(sizeof *sig);
	CHECK(fmt_ms_sig_parse(sig_text, sig_len, sig, &e) == FMT_OK);
	CHECK(sig->prehashed == 1);
	CHECK_STR(sig->trusted, "timestamp:1\tfile:x\thashed");
	fmt_ms_public keys[2] = { pub, pub };
	keys[0].keynum[0] ^= 1; /* another key first: the one with the id is found */
	CHECK(fmt_ms_verify_file(sig, keys, 2, path, &which, &e) == FMT_OK);
	CHECK(which == 1);
	CHECK(fmt_ms_verify_file(sig, keys, 1, path, &which, &e) == FMT_SIGNATURE);
	CHECK(strstr(e.msg, "wrong key id") != NULL);
	/* a trusted comment changed after signing: the global signature fails */
	sig->trusted[0] = 'T';
	fmt_err_clear(&e);
	CHECK(fmt_ms_verify_file(sig, &pub, 1, path, &which, &e) == FMT_SIGNATURE);
	CHECK(strstr(e.msg, "bad global signature") != NULL);
	/* a trusted comment with a newline is refused when signing */
	char *t2 = NULL;
	CHECK(fmt_ms_sign(&sec2, hash, "two\nlines", &t2, &sig_len, &e) == FMT_USAGE);
	CHECK(t2 == NULL);
	unlink(path);
	free(sig);
	free(sig_text);
	free(pub_text);
	sodium_free(sec_text);
	fmt_ms_secret_free(&sec);
	fmt_ms_secret_free(&sec2);
	fmt_ms_secret_free(&sec2); /* idempotent */
}

/* minisign 0.11 writes a zero checksum in a key made with -W: it is read; any other wrong
 * checksum is refused. */
TEST(minisign_secret_checksum_rules)
{
	fmt_ms_public pub;
	fmt_ms_secret sec, back;
	fmt_err e;
	uint8_t *text;
	size_t len;
	fmt_err_clear(&e);
	CHECK(fmt_ms_keygen(&pub, &sec, &e) == FMT_OK);
	CHECK(fmt_ms_secret_text(&sec, NULL, 0, &text, &len, &e) == FMT_OK);
	const char *nl = memchr(text, '\n', len);
	CHECK(nl != NULL);
	size_t off = (size_t)(nl + 1 - (const char *)text);
	uint8_t rec[158];
	size_t got = 0;
	CHECK(sodium_base642bin(rec, sizeof rec, (const char *)text + off, len - off - 1, NULL, &got,
				NULL, sodium_base64_VARIANT_ORIGINAL) == 0 && got == 158);
	char line[512];
	for (int variant = 0; variant < 2; variant++) {
		memset(rec + 126, 0, 32);
		if (variant == 1)
			rec[126] = 1;
		sodium_bin2base64(line, sizeof line, rec, sizeof rec, sodium_base64_VARIANT_ORIGINAL);
		char file[700];
		snprintf(file, sizeof file, "untrusted comment: c\n%s\n", line);
		fmt_err_clear(&e);
		fmt_kind k = fmt_ms_secret_parse((const uint8_t *)file, strlen(file), NULL, 0, &back, &e);
		CHECK(k == (variant == 0 ? FMT_OK : FMT_INVALID_FORMAT));
		fmt_ms_secret_free(&back);
	}
	/* an unknown KDF, a record one byte short */
	rec[2] = 'X';
	sodium_bin2base64(line, sizeof line, rec, sizeof rec, sodium_base64_VARIANT_ORIGINAL);
	char file[700];
	snprintf(file, sizeof file, "untrusted comment: c\n%s\n", line);
	CHECK(fmt_ms_secret_encrypted((const uint8_t *)file, strlen(file)) == -1);
	CHECK(fmt_ms_secret_parse((const uint8_t *)file, strlen(file), NULL, 0, &back, &e) == FMT_INVALID_FORMAT);
	sodium_bin2base64(line, sizeof line, rec, 157, sodium_base64_VARIANT_ORIGINAL);
	snprintf(file, sizeof file, "untrusted comment: c\n%s\n", line);
	CHECK(fmt_ms_secret_parse((const uint8_t *)file, strlen(file), NULL, 0, &back, &e) == FMT_INVALID_FORMAT);
	/* an encrypted key with absurd scrypt limits is refused before scrypt runs */
	memcpy(rec + 2, "Sc", 2);
	memset(rec + 38, 0xff, 16);
	sodium_bin2base64(line, sizeof line, rec, sizeof rec, sodium_base64_VARIANT_ORIGINAL);
	snprintf(file, sizeof file, "untrusted comment: c\n%s\n", line);
	CHECK(fmt_ms_secret_encrypted((const uint8_t *)file, strlen(file)) == 1);
	CHECK(fmt_ms_secret_parse((const uint8_t *)file, strlen(file), (const uint8_t *)"pw", 2, &back, &e) == FMT_INVALID_FORMAT);
	CHECK(fmt_ms_secret_parse((const uint8_t *)file, strlen(file), NULL, 0, &back, &e) == FMT_USAGE);
	sodium_free(text);
	fmt_ms_secret_free(&sec);
}

TEST(minisign_signature_parse_refusals)
{
	fmt_ms_sig *sig = malloc(sizeof *sig);
	fmt_err e;
	const char *good =
		"untrusted comment: signature from minisign secret key\n"
		"RUQFuQxFm6us0oEoBkSPwgNfLiH9j4XL3UZqtg3yEIsYWnxeEZ8zDPgCAPrlrbVbCy0iOtEMHupE5qUU8T3Cmwk9+vDXK8IbzwM=\n"
		"trusted comment: timestamp:1796142457\tfile:f\thashed\n"
		"RgdGkQ9Pvv3QI9J+maIe1vs27qpdSXv6gK5X9mCn7pTxXzUZ+bEUppfQyjovudejhgdq5Ja74cHlmDabvH19Bw==\n";
	fmt_err_clear(&e);
	CHECK(fmt_ms_sig_parse(good, strlen(good), sig, &e) == FMT_OK);
	CHECK(sig->prehashed == 1);
	char id[FMT_MS_KEY_ID_HEX];
	fmt_ms_key_id(sig->keynum, id);
	CHECK_STR(id, "D2ACAB9B450CB905");
	CHECK(sig->trusted_len == strlen("timestamp:1796142457\tfile:f\thashed"));
	/* CRLF line ends are read too */
	char crlf[600];
	size_t n = 0;
	for (const char *p = good; *p; p++) {
		if (*p == '\n')
			crlf[n++] = '\r';
		crlf[n++] = *p;
	}
	CHECK(fmt_ms_sig_parse(crlf, n, sig, &e) == FMT_OK);
	/* every truncation is refused */
	for (size_t cut = 0; cut < strlen(good) - 1; cut++) {
		fmt_err_clear(&e);
		int refused = fmt_ms_sig_parse(good, cut, sig, &e) == FMT_INVALID_FORMAT;
		CHECK(refused);
		if (!refused)
			break;
	}
	free(sig);
}

/* RFC 8032 §7.1, TEST 2: pure Ed25519 over one byte, as .apsim ed25519 values and the .ald
 * signature block use it. */
TEST(ed25519_rfc8032_vector_and_trust_lookup)
{
	uint8_t seed[32], pk[32], want[64], sig[64];
	fmt_err e;
	fmt_err_clear(&e);
	CHECK(sodium_init() >= 0);
	sodium_hex2bin(seed, 32, "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", 64, NULL, NULL, NULL);
	sodium_hex2bin(pk, 32, "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", 64, NULL, NULL, NULL);
	sodium_hex2bin(want, 64, "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
		       "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00", 128, NULL, NULL, NULL);
	fmt_ms_secret sec = { .sk = sodium_malloc(64) };
	uint8_t pk2[32];
	CHECK(sec.sk != NULL);
	crypto_sign_seed_keypair(pk2, sec.sk, seed);
	CHECK(memcmp(fmt_ms_secret_pk(&sec), pk, 32) == 0);
	const uint8_t msg[1] = { 0x72 };
	CHECK(fmt_ed25519_sign(&sec, msg, 1, sig, &e) == FMT_OK);
	CHECK(memcmp(sig, want, 64) == 0);
	CHECK(fmt_ed25519_verify(pk, msg, 1, sig) == 1);
	sig[10] ^= 1;
	CHECK(fmt_ed25519_verify(pk, msg, 1, sig) == 0);
	fmt_ms_secret_free(&sec);
	fmt_ms_public keys[2] = { { .keynum = { 1 } }, { .keynum = { 2 } } };
	memcpy(keys[1].pk, pk, 32);
	CHECK(fmt_trust_find_pk(keys, 2, pk) == &keys[1]);
	CHECK(fmt_trust_find_id(keys, 2, (const uint8_t[8]){ 1 }) == &keys[0]);
	CHECK(fmt_trust_find_id(keys, 2, (const uint8_t[8]){ 3 }) == NULL);
	CHECK(fmt_trust_find_pk(keys, 1, pk) == NULL);
}

TEST(base64_exact_and_canonical)
{
	uint8_t out[3], two[2];
	char text[8];
	fmt_base64((const uint8_t *)"\xff\x00\x10", 3, text, sizeof text);
	CHECK_STR(text, "/wAQ");
	CHECK(fmt_unbase64("/wAQ", 4, out, 3) == 0 && memcmp(out, "\xff\x00\x10", 3) == 0);
	CHECK(fmt_unbase64("/wA=", 4, two, 2) == 0);
	CHECK(fmt_unbase64("/wB=", 4, two, 2) != 0);   /* unused bits set: not canonical */
	CHECK(fmt_unbase64("/wA", 3, two, 2) != 0);    /* padding required */
	CHECK(fmt_unbase64("/wAQ", 4, two, 2) != 0);   /* wrong length */
	CHECK(fmt_unbase64("/w-Q", 4, out, 3) != 0);   /* not the standard alphabet */
}

/* An unencrypted secret key file readable by others is refused, its mode taken from the
 * descriptor that was read (fmt_secret_from_file_st), no longer from a stat of the path after
 * the read: a file swapped in between went unchecked. */
TEST(minisign_unencrypted_secret_key_mode)
{
	fmt_ms_public pub;
	fmt_ms_secret sec, back;
	fmt_hmac_key text;
	struct stat st;
	fmt_err e;
	uint8_t *sec_text;
	size_t sec_len;
	fmt_err_clear(&e);
	CHECK(fmt_ms_keygen(&pub, &sec, &e) == FMT_OK);
	CHECK(fmt_ms_secret_text(&sec, NULL, 0, &sec_text, &sec_len, &e) == FMT_OK);
	char path[] = "/tmp/fmt-unit-minisign-key-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, sec_text, sec_len) == (ssize_t)sec_len);
	close(fd);
	CHECK(chmod(path, 0644) == 0);
	CHECK(fmt_secret_from_file_st(path, &text, &st, &e) == FMT_OK);
	CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0644 && text.len > 0);
	fmt_hmac_key_free(&text);
	CHECK(fmt_ms_secret_load(path, NULL, &back, &e) == FMT_USAGE);
	CHECK_STR(e.msg, "the secret key is readable by others (mode 0644); chmod 600 it");
	CHECK_STR(e.file, path);
	CHECK(chmod(path, 0600) == 0);
	fmt_err_clear(&e);
	CHECK(fmt_ms_secret_load(path, NULL, &back, &e) == FMT_OK);
	CHECK(memcmp(back.sk, sec.sk, FMT_MS_SK) == 0);
	fmt_ms_secret_free(&back);
	fmt_ms_secret_free(&sec);
	sodium_free(sec_text);
	unlink(path);
}
