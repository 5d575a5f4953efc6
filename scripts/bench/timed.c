/* timed CMD...: run CMD (its standard output discarded) and print "WALL CPU MAXRSS": the seconds
 * from its spawn to its exit, its user + system CPU seconds and its peak RSS in KiB (wait4's
 * rusage, what /usr/bin/time -f '%U %S %M' reports, to the microsecond). Exits with CMD's
 * status; 127 when it cannot be run. Built by `make bench` (build/bench/timed).
 *
 * Why not the shell: `$EPOCHREALTIME` around `$(/usr/bin/time ... | tail | awk)` also counts
 * the forks of the shell, time, tail and awk: `true` read 18 ms that way on the 2-core VM, 3 ms
 * here (its own exec and loading), and on a 60 ms quantization the 15 ms more on both sides
 * turned a 1.76x speed-up of -T 2 into 1.5x. Not a script language either: a child's peak RSS
 * includes what its parent had mapped when it forked (8 MB of Python). */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs("usage: timed CMD [ARG...]\n", stderr);
		return 2;
	}
	posix_spawn_file_actions_t actions;
	if (posix_spawn_file_actions_init(&actions) ||
	    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)) {
		fputs("timed: out of memory\n", stderr);
		return 127;
	}
	struct timespec t0, t1;
	pid_t pid;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int err = posix_spawnp(&pid, argv[1], &actions, NULL, argv + 1, environ);
	if (err) {
		fprintf(stderr, "timed: %s: %s\n", argv[1], strerror(err));
		return 127;
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("timed: wait4");
		return 127;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	printf("%.4f %.3f %ld\n", wall, cpu, ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
