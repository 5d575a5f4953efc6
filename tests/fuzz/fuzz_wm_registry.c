/* Fuzz the buyers registry reader of fmt-watermark (libcommon/watermark/watermark_registry.c). */
#include <stdint.h>
#include <stdlib.h>
#include "fmt/watermark.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fmt_err e;
	fmt_err_clear(&e);
	char *buyer = NULL;
	fmt_err_clear(&e);
	if (fmt_wm_registry_find((const char *)data, size, "c879b5a7cda6", &buyer, &e) == FMT_OK)
		free(buyer);
	return 0;
}
