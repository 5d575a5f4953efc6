/* Fuzz the bundle reader (fmt_bundle_verify): tar and tar.zst parsing by libarchive, the
 * manifest parser, member-name rules and digest checks. libarchive reads from a path, so each
 * input goes through one temporary file; and from a stream (standard input), in short reads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "fmt/bundle.h"
#include "fmt/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	if (!path[0]) {
		snprintf(path, sizeof path, "/tmp/fuzz-bundle-%d.tar", (int)getpid());
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	fmt_bundle_info info = { 0 };
	fmt_err e;
	fmt_err_clear(&e);
	(void)fmt_bundle_probe(path);
	(void)fmt_bundle_verify(path, &info, &e);
	fmt_bundle_info_free(&info);
	unlink(path);
	fmt_source stream;
	if (fmt_source_stream_memory(&stream, "-", data, size, 512, 4096, &e) == FMT_OK) {
		fmt_bundle_info from_stream = { 0 };
		(void)fmt_bundle_probe_head(data, size);
		(void)fmt_bundle_verify_stream(&stream, &from_stream, &e);
		fmt_bundle_info_free(&from_stream);
		fmt_source_close(&stream);
	}
	return 0;
}
