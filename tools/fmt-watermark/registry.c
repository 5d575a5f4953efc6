/* The buyers registry: a JSON Lines file, one object per embed --registry, which maps the
 * buyer hash an extraction recovers back to the buyer id. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fmt/out.h"
#include "wm.h"

#define REGISTRY_MAX (256u << 20)

void wm_utc_now(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

fmt_kind wm_registry_append(const char *path, const char *buyer, const uint8_t hash[32],
			    uint64_t payload, const char *output, fmt_err *e)
{
	char hex[65], pay[17], when[32];
	fmt_hex(hash, 32, hex);
	snprintf(pay, sizeof pay, "%016llx", (unsigned long long)payload);
	wm_utc_now(when);
	json_t *o = json_pack("{s:o, s:s, s:s, s:o, s:s}", "buyer", fmt_json_string(buyer, strlen(buyer)),
			      "buyer_hash", hex, "payload", pay, "file", fmt_json_string(output, strlen(output)),
			      "time", when);
	char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!line)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = FMT_OK;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t n = strlen(line);
	line[n] = '\n';
	if (fd < 0 || write(fd, line, n + 1) != (ssize_t)(n + 1))
		k = fmt_fail(e, FMT_IO, "cannot append to the registry: %s", strerror(errno));
	if (fd >= 0 && close(fd) != 0 && k == FMT_OK)
		k = fmt_fail(e, FMT_IO, "cannot write the registry: %s", strerror(errno));
	free(line);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

fmt_kind wm_registry_lookup(const char *path, uint64_t payload, char **buyer, fmt_err *e)
{
	char *text;
	size_t n;
	*buyer = NULL;
	fmt_kind k = fmt_read_file(path, REGISTRY_MAX, &text, &n, e);
	if (k != FMT_OK)
		return k;
	char prefix[13];
	snprintf(prefix, sizeof prefix, "%012llx", (unsigned long long)(payload >> 16));
	k = fmt_wm_registry_find(text, n, prefix, buyer, e);
	free(text);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}
