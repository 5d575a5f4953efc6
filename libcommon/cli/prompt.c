/* Secrets typed at the terminal without echo (fmt/prompt.h). The bytes go straight into
 * sodium_malloc memory, a byte at a time; nothing passes through stdio buffers. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <termios.h>
#include <unistd.h>
#include "fmt/prompt.h"

/* What a person types at a prompt. */
#define PROMPT_MAX 4096u

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

/* Prompts take turns on a terminal (make -j signing shards with one passphrase-protected key:
 * prompts that overlapped split the typed lines between them and restored each other's echo
 * state). Each holds an exclusive lock on its terminal's device from before it saves the
 * terminal's state until it has restored it, and over both prompts of a confirmed passphrase.
 * The device is the one a standard stream of this session's terminal names: a lock on /dev/tty
 * itself would be one lock for every terminal of the machine. No such stream: no lock. */
static int terminal_lock_fd = -1;
static unsigned terminal_lock_depth;

static int open_own_terminal(void)
{
	const pid_t session = getsid(0);
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
		if (!isatty(fd) || tcgetsid(fd) != session)
			continue;
		const char *path = ttyname(fd);
		int dev = path ? open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC) : -1;
		if (dev >= 0)
			return dev;
	}
	return -1;
}

static void terminal_lock(void)
{
	if (terminal_lock_depth++ > 0)
		return;
	terminal_lock_fd = open_own_terminal();
	while (terminal_lock_fd >= 0 && flock(terminal_lock_fd, LOCK_EX) != 0 && errno == EINTR)
		;
}

static void terminal_unlock(void)
{
	if (terminal_lock_depth == 0 || --terminal_lock_depth > 0)
		return;
	if (terminal_lock_fd >= 0)
		close(terminal_lock_fd);   /* releases the lock */
	terminal_lock_fd = -1;
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
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct termios quiet;
	if (fd >= 0)
		terminal_lock();
	if (fd < 0 || tcgetattr(fd, &prompt_saved_termios) != 0) {
		if (fd >= 0) {
			terminal_unlock();
			close(fd);
		}
		return fmt_fail(e, FMT_USAGE, "no terminal to prompt on; use --secret-file or --secret-env");
	}
	fmt_hmac_key scratch;
	fmt_kind k = fmt_secret_alloc(PROMPT_MAX, &scratch, e);
	if (k != FMT_OK) {
		terminal_unlock();
		close(fd);
		return k;
	}
	quiet = prompt_saved_termios;
	quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK);
	quiet.c_lflag |= ICANON;
	prompt_interrupted = 0;
	prompt_tty_fd = fd;
	prompt_catch_signals();
	size_t len = 0;
	/* Echo off (and what was typed before discarded) before the prompt shows: a line sent as
	 * soon as the prompt appears (expect, a pty driver) is then read, not flushed. */
	if (tcsetattr(fd, TCSAFLUSH, &quiet) != 0) {
		k = fmt_fail(e, FMT_IO, "cannot turn off echo on the terminal: %s", strerror(errno));
	} else {
		write_all(fd, prompt ? prompt : "Secret: ");
		k = read_tty_line(fd, scratch.bytes, PROMPT_MAX, &len, e);
	}
	tcsetattr(fd, TCSAFLUSH, &prompt_saved_termios);
	prompt_tty_fd = -1;
	prompt_release_signals();
	write_all(fd, "\n");
	terminal_unlock();
	close(fd);
	if (k == FMT_OK && len == 0)
		k = fmt_fail(e, FMT_USAGE, "no secret was typed");
	if (k == FMT_OK && (k = fmt_secret_alloc(len, out, e)) == FMT_OK)
		memcpy(out->bytes, scratch.bytes, len);
	fmt_hmac_key_free(&scratch);
	return k;
}

fmt_kind fmt_prompt_passphrase(int confirm, fmt_hmac_key *pw, fmt_err *e)
{
	memset(pw, 0, sizeof *pw);
	int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty < 0)
		return fmt_fail(e, FMT_USAGE, "no terminal to ask for the passphrase on; use "
				"--passphrase-file FILE or --passphrase-env NAME%s", confirm ? " (or -W)" : "");
	close(tty);
	terminal_lock();
	fmt_kind k = fmt_secret_from_prompt("Passphrase: ", pw, e);
	if (k == FMT_OK && confirm) {
		fmt_hmac_key again;
		k = fmt_secret_from_prompt("Passphrase (again): ", &again, e);
		if (k == FMT_OK && (again.len != pw->len || !fmt_ct_equal(again.bytes, pw->bytes, pw->len)))
			k = fmt_fail(e, FMT_USAGE, "the two passphrases differ");
		fmt_hmac_key_free(&again);
		if (k != FMT_OK)
			fmt_hmac_key_free(pw);
	}
	terminal_unlock();
	return k;
}

fmt_kind fmt_prompt_password(fmt_password *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	if (!isatty(STDIN_FILENO))
		return FMT_OK;
	fmt_hmac_key s;
	fmt_kind k = fmt_secret_from_prompt("Password: ", &s, e);
	if (k == FMT_USAGE && strstr(e->msg, "no terminal"))
		return fmt_fail(e, FMT_USAGE, "no terminal to ask for the password on; use --password-file or --password-env");
	if (k != FMT_OK)
		return k;
	out->bytes = s.bytes; /* the password takes the secret's sodium_malloc'd bytes over */
	out->len = s.len;
	return FMT_OK;
}
