/* --run-tests: a file's embedded regression tests, run by the tool its driver names (nk-run for
 * .nk), found beside fmt-verify itself or else on PATH. Its case lines are not shown (fmt-verify
 * prints one line per file); its error message is, on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "verify.h"

extern char **environ;

/* "<directory of this executable>/name" when that exists, else name (looked up on PATH). */
static void runner_path(const char *name, char *out, size_t n)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len > 0) {
		self[len] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(out, n, "%s/%s", self, name);
			if (access(out, X_OK) == 0)
				return;
		}
	}
	snprintf(out, n, "%s", name);
}

fmt_kind run_embedded_tests(const fmt_model *m, const char *path, fmt_err *e)
{
	const char *runner = m->driver->test_runner;
	if (!runner)
		return FMT_OK;
	char exe[PATH_MAX + 64];
	runner_path(runner, exe, sizeof exe);
	char *argv[] = { exe, "--test", "--quiet", "--", (char *)path, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int rc = posix_spawnp(&pid, exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return fmt_fail(e, FMT_IO, "cannot run %s for the embedded tests: %s", runner, strerror(rc));
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return fmt_fail(e, FMT_IO, "waiting for %s: %s", runner, strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return FMT_OK;
	if (WIFEXITED(status) && WEXITSTATUS(status) == FMT_TEST_FAILED)
		return fmt_fail(e, FMT_TEST_FAILED, "embedded tests failed (%s --test %s shows each case)", runner, path);
	if (WIFEXITED(status))
		return fmt_fail(e, (fmt_kind)WEXITSTATUS(status), "%s could not run the embedded tests (exit %d)",
				runner, WEXITSTATUS(status));
	return fmt_fail(e, FMT_INTERNAL, "%s was killed by signal %d", runner, WTERMSIG(status));
}
