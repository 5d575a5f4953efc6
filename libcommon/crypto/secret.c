/* Shared secrets, never from the command line: a file, an environment variable the user
 * names, or a line typed at a no-echo prompt. The bytes go straight into sodium_malloc
 * memory; nothing passes through stdio buffers. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include "crypto_internal.h"
#include "fmt/io.h"

/* A secret longer than this is more likely the wrong file than a secret. */
#define SECRET_MAX (64u * 1024u)
/* What a person types at a prompt. */
#define PROMPT_MAX 4096u

void fmt_crypto_strip_newline(const uint8_t *bytes, size_t *len)
{
	if (*len > 0 && bytes[*len - 1] == '\n') {
		(*len)--;
		if (*len > 0 && bytes[*len - 1] == '\r')
			(*len)--;
	}
}

/* Move the first len bytes of a scratch secret buffer into a key of exactly that size. */
static fmt_kind key_from_scratch(const uint8_t *scratch, size_t len, fmt_hmac_key *out, fmt_err *e)
{
	fmt_kind k = fmt_crypto_key_alloc(len, out, e);
	if (k == FMT_OK)
		memcpy(out->bytes, scratch, len);
	return k;
}

fmt_kind fmt_secret_from_file(const char *path, fmt_hmac_key *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	/* A regular file, or a pipe: --secret-file <(pass show team) gives one, through the
	 * /dev/fd symbolic link (so no O_NOFOLLOW here). The open never blocks: a FIFO nobody
	 * writes to opens at once and reads as empty, so it is refused instead of hanging. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fmt_fail(e, errno == ENOENT ? FMT_USAGE : FMT_IO, "cannot open the secret file %s: %s",
				path, strerror(errno));
	char what[64 + FMT_ERR_FILE_MAX];
	struct stat st;
	snprintf(what, sizeof what, "secret file %s", path);
	k = fmt_small_check(fd, FMT_SMALL_NAMED, what, &st, e);
	/* One byte more than the cap, so that a full buffer means "too long". */
	uint8_t *scratch = k == FMT_OK ? sodium_malloc(SECRET_MAX + 1) : NULL;
	if (k == FMT_OK && !scratch)
		k = fmt_fail(e, FMT_INTERNAL, "out of secure memory for the secret");
	size_t len = 0;
	if (k == FMT_OK && (k = fmt_small_read(fd, scratch, SECRET_MAX + 1, &len, e)) != FMT_OK)
		fmt_err_prefix(e, "cannot read the secret file %s", path);
	close(fd);
	if (k == FMT_OK && len > SECRET_MAX)
		k = fmt_fail(e, FMT_USAGE, "secret file %s is longer than %u bytes", path, SECRET_MAX);
	if (k == FMT_OK) {
		fmt_crypto_strip_newline(scratch, &len);
		if (len == 0)
			k = fmt_fail(e, FMT_USAGE, "secret file %s is empty", path);
	}
	if (k == FMT_OK)
		k = key_from_scratch(scratch, len, out, e);
	if (scratch)
		sodium_free(scratch);
	return k;
}

fmt_kind fmt_secret_from_env(const char *name, fmt_hmac_key *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	if (!name || !*name || strchr(name, '='))
		return fmt_fail(e, FMT_USAGE, "'%s' is not an environment variable name", name ? name : "");
	const char *value = getenv(name);
	if (!value)
		return fmt_fail(e, FMT_USAGE, "environment variable %s is not set", name);
	if (!*value)
		return fmt_fail(e, FMT_USAGE, "environment variable %s is empty", name);
	return key_from_scratch((const uint8_t *)value, strlen(value), out, e);
}

/* The terminal whose echo is off while the user types, for the signal handler to restore. */
static volatile sig_atomic_t prompt_tty_fd = -1;
static volatile sig_atomic_t prompt_interrupted;
static struct termios prompt_saved_termios;
static const int prompt_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP };
#define N_PROMPT_SIGNALS (sizeof prompt_signals / sizeof prompt_signals[0])
static struct sigaction prompt_old_actions[N_PROMPT_SIGNALS];

static void prompt_on_signal(int sig)
{
	int saved_errno = errno;
	if (prompt_tty_fd >= 0)
		tcsetattr(prompt_tty_fd, TCSAFLUSH, &prompt_saved_termios);
	prompt_interrupted = 1;
	/* Hand the signal on to whatever handled it before (default: terminate or stop). */
	for (size_t i = 0; i < N_PROMPT_SIGNALS; i++)
		if (prompt_signals[i] == sig)
			sigaction(sig, &prompt_old_actions[i], NULL);
	raise(sig);
	errno = saved_errno;
}

static void prompt_catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = prompt_on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_PROMPT_SIGNALS; i++) {
		sigaction(prompt_signals[i], NULL, &prompt_old_actions[i]);
		if (prompt_old_actions[i].sa_handler != SIG_IGN)
			sigaction(prompt_signals[i], &sa, NULL);
	}
}

static void prompt_release_signals(void)
{
	for (size_t i = 0; i < N_PROMPT_SIGNALS; i++)
		sigaction(prompt_signals[i], &prompt_old_actions[i], NULL);
}

static void write_all(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* One line from the terminal, a byte at a time so that no stdio buffer holds any of it. */
static fmt_kind read_tty_line(int fd, uint8_t *buf, size_t cap, size_t *len, fmt_err *e)
{
	size_t have = 0;
	for (;;) {
		uint8_t c;
		ssize_t got = read(fd, &c, 1);
		if (prompt_interrupted)
			return fmt_fail(e, FMT_USAGE, "the secret prompt was interrupted");
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return fmt_fail(e, FMT_IO, "cannot read from the terminal: %s", strerror(errno));
		if (got == 0 || c == '\n')
			break;
		if (have == cap)
			return fmt_fail(e, FMT_USAGE, "the secret typed is longer than %zu bytes", cap);
		buf[have++] = c;
	}
	if (have > 0 && buf[have - 1] == '\r')
		have--;
	*len = have;
	return FMT_OK;
}

fmt_kind fmt_secret_from_prompt(const char *prompt, fmt_hmac_key *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct termios quiet;
	if (fd < 0 || tcgetattr(fd, &prompt_saved_termios) != 0) {
		if (fd >= 0)
			close(fd);
		return fmt_fail(e, FMT_USAGE, "no terminal to prompt on; use --secret-file or --secret-env");
	}
	uint8_t *scratch = sodium_malloc(PROMPT_MAX);
	if (!scratch) {
		close(fd);
		return fmt_fail(e, FMT_INTERNAL, "out of secure memory for the secret");
	}
	quiet = prompt_saved_termios;
	quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK);
	quiet.c_lflag |= ICANON;
	prompt_interrupted = 0;
	prompt_tty_fd = fd;
	prompt_catch_signals();
	write_all(fd, prompt ? prompt : "Secret: ");
	size_t len = 0;
	if (tcsetattr(fd, TCSAFLUSH, &quiet) != 0)
		k = fmt_fail(e, FMT_IO, "cannot turn off echo on the terminal: %s", strerror(errno));
	else
		k = read_tty_line(fd, scratch, PROMPT_MAX, &len, e);
	tcsetattr(fd, TCSAFLUSH, &prompt_saved_termios);
	prompt_tty_fd = -1;
	prompt_release_signals();
	write_all(fd, "\n");
	close(fd);
	if (k == FMT_OK && len == 0)
		k = fmt_fail(e, FMT_USAGE, "no secret was typed");
	if (k == FMT_OK)
		k = key_from_scratch(scratch, len, out, e);
	sodium_free(scratch);
	return k;
}
