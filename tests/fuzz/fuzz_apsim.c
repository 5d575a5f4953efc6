/* Fuzz the Apsi metadata interpretation (the input as a safetensors file in memory, opened
 * with the apsim driver, described, verified without and with a key, its compressed tensors
 * dequantized) and the index parser (the input as index JSON text), and both probes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/apsim.h"
#include "fmt/minisign.h"
#include "fmt/qtensor.h"
#include "fmt/registry.h"

static uint8_t secret[] = "team secret";

static int open_bytes(const uint8_t *data, size_t size, fmt_model *m, fmt_err *e)
{
	return fmt_model_open_memory(m, "fuzz", data, size, &fmt_driver_apsim, e) == FMT_OK;
}

static void dequantize_all(const fmt_model *m)
{
	fmt_model out;
	fmt_err e;
	fmt_err_clear(&e);
	fmt_model_init(&out);
	for (size_t i = 0; i < m->n_qtensors; i++) {
		if (fmt_model_add_dequantized(&out, m, &m->qtensors[i], NULL, &e) != FMT_OK)
			abort(); /* open checked every descriptor against its tensors */
		const fmt_tensor *t = &out.tensors[out.n_tensors - 1];
		if (t->nbytes > (1u << 20))
			continue;
		uint8_t *buf = malloc(t->nbytes ? (size_t)t->nbytes : 1);
		if (!buf)
			abort();
		(void)fmt_tensor_read(&out, t, 0, buf, (size_t)t->nbytes, &e);
		free(buf);
	}
	fmt_model_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	size_t head = size < FMT_PROBE_BYTES ? size : FMT_PROBE_BYTES;
	(void)fmt_driver_apsim.probe(data, head, size);
	(void)fmt_driver_apsim_index.probe(data, head, size);
	if (open_bytes(data, size, &m, &e)) {
		fmt_hmac_key key;
		memset(&key, 0, sizeof key);
		key.bytes = secret;
		key.len = sizeof secret - 1;
		strcpy(key.id, "shared");
		fmt_verify_opts none = { 0 }, with_key = { .keys.hmac = &key, .threads = 1 };
		json_t *d = fmt_driver_apsim.describe(&m);
		if (!d)
			abort();
		json_decref(d);
		(void)fmt_driver_apsim.verify(&m, &none, &e);
		(void)fmt_driver_apsim.verify(&m, &with_key, &e);
		static const fmt_ms_public trusted = { .keynum = { 0x35, 0xbc, 0x74, 0x78, 0xeb, 0x6b, 0x2b, 0xec } };
		fmt_verify_opts with_trust = { .keys = { .trusted = &trusted, .n_trusted = 1 }, .threads = 1 };
		(void)fmt_driver_apsim.verify(&m, &with_trust, &e);
		char *table = NULL;
		size_t len = 0;
		if (fmt_apsim_table(&m, &table, &len, &e) != FMT_OK)
			abort();
		free(table);
		if (!fmt_apsim_info_of(&m))
			abort();
		dequantize_all(&m);
	}
	fmt_model_free(&m);

	fmt_apsim_index ix;
	if (fmt_apsim_index_parse((const char *)data, size, &ix, &e) == FMT_OK)
		fmt_apsim_index_free(&ix);
	return 0;
}
