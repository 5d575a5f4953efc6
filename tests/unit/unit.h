/* A tiny unit-test harness: TEST(name) registers a test; CHECK records failures. The runner
 * prints one line per failure and closes with "N passed, N failed". */
#ifndef UNIT_H
#define UNIT_H

#include <stdio.h>
#include <string.h>
#include <stdint.h>

typedef void (*unit_fn)(void);
void unit_register(const char *name, const char *file, unit_fn fn);
void unit_fail(const char *file, int line, const char *expr);
extern int unit_current_failed;
/* A fresh directory under /tmp (static buffer, overwritten by the next call), and how many
 * entries a directory holds besides . and .. */
char *unit_tmp_dir(void);
int unit_dir_entries(const char *dir);
/* While unit_quiet is set, failures are collected in unit_failures (newline-separated, cut
 * short when full) instead of printed: a test that proves a check fails reads them, then clears
 * unit_current_failed. */
extern int unit_quiet;
extern char unit_failures[8192];

/* UNIT_SANITIZED in a sanitizer build (make asan): about ten times slower, and AddressSanitizer
 * keeps an anonymous shadow of an eighth of the memory a test touches, mappings included. */
#if defined(__SANITIZE_ADDRESS__)
#define UNIT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define UNIT_SANITIZED 1
#endif
#endif

#define TEST(name)                                                             \
	static void test_##name(void);                                         \
	__attribute__((constructor)) static void register_##name(void)         \
	{ unit_register(#name, __FILE__, test_##name); }                       \
	static void test_##name(void)

#define CHECK(expr)                                                            \
	do { if (!(expr)) unit_fail(__FILE__, __LINE__, #expr); } while (0)
#define CHECK_EQ_U64(a, b)                                                     \
	do { unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
	     if (a_ != b_) { char m_[256]; snprintf(m_, sizeof m_, "%s == %s (%llu != %llu)", #a, #b, a_, b_); \
	                     unit_fail(__FILE__, __LINE__, m_); } } while (0)
#define CHECK_STR(a, b)                                                        \
	do { const char *a_ = (a), *b_ = (b);                                  \
	     if (!a_ || !b_ || strcmp(a_, b_)) { char m_[1024]; snprintf(m_, sizeof m_, "%s == %s (\"%.300s\" != \"%.300s\")", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	                                          unit_fail(__FILE__, __LINE__, m_); } } while (0)
#define CHECK_MEM(a, b, n) CHECK(memcmp((a), (b), (n)) == 0)

#endif
