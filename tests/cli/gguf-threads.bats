#!/usr/bin/env bats
# Issue 23, -T: the parallel GGUF writer cuts a converted tensor into pieces of 256 KiB of
# output (on block boundaries) that the threads quantize and place side by side. Whatever the
# thread count, the SIMD level, and however the pieces fall (more threads than tensors, a last
# piece shorter than the others, an odd number of pieces), the bytes are those of one thread
# writing in order, and a refused value is the first in file order.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	export TQ="$BATS_FILE_TMPDIR/tq"
	mkdir -p "$TQ"
	# two.safetensors: big.weight [520, 2304] (4.8 MB of F32: Q8_0 1272960 bytes, 5 pieces, 4 of
	# 262140 and one of 224400; Q4_K 673920 bytes, 3 pieces of 262080, 262080 and 149760), then
	# small.weight [4, 2304] (one piece). nan.safetensors: big.weight with NaN at elements
	# 1000000 (Q8_0 piece 4) and 300001 (piece 1), and small.weight with +Inf at element 0.
	python3 - "$TQ" <<'EOF'
import json, struct, sys
import numpy as np
# values of every magnitude a block sees: a sine scaled per row, an outlier every 97 elements
i = np.arange(520 * 2304)
big = (np.sin(i * 0.731) * (1 + i // 2304 % 13) * np.where(i % 97 == 0, 9.0, 1.0)).astype("<f4")
small = (np.cos(np.arange(4 * 2304) * 0.173) / 7).astype("<f4")
def write(path):
    header = json.dumps({"big.weight": {"dtype": "F32", "shape": [520, 2304], "data_offsets": [0, big.nbytes]},
                         "small.weight": {"dtype": "F32", "shape": [4, 2304],
                                          "data_offsets": [big.nbytes, big.nbytes + small.nbytes]}}).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + big.tobytes() + small.tobytes())
write(sys.argv[1] + "/two.safetensors")
big[[1000000, 300001]] = np.nan
small[0] = np.inf
write(sys.argv[1] + "/nan.safetensors")
EOF
	fmt-convert -q --dtype f32 "$TQ/two.safetensors" "$TQ/two.gguf"
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
}

@test "-T 1, 2, 3 and 5 on a 2-tensor file cut into odd numbers of pieces: the same bytes, at every SIMD level" {
	for t in q8_0:1272960 q4_k:673920 iq4_xs:636480 q6_k:982800; do
		IFS=: read -r t bytes <<<"$t"
		run fmt-convert -f -T 1 --dtype "$t" "$TQ/two.gguf" one.gguf
		assert_success
		# the big tensor has the size of its type (as one thread writes it, not cut)
		run fmt-inspect --json one.gguf
		assert_success
		assert_equal "$(jq -r '.tensors[] | select(.name == "big.weight") | "\(.dtype) \(.bytes)"' <<<"$output")" \
			"${t^^} $bytes"
		for n in 2 3 5; do
			for simd in portable avx2 ""; do
				FMTKIT_QUANT_SIMD=$simd run fmt-convert -f -T "$n" --dtype "$t" "$TQ/two.gguf" "t$n.gguf"
				assert_success
				cmp one.gguf "t$n.gguf" || fail "$t: -T $n FMTKIT_QUANT_SIMD=$simd differs from -T 1"
			done
		done
	done
}

@test "a NaN in a later piece and one in an earlier piece of the same tensor: the earlier is named on any -T" {
	for t in "q8_0 Q8_0" "q4_k Q4_K"; do
		read -r t name <<<"$t"
		for n in 1 2 3 5; do
			run --separate-stderr fmt-convert -T "$n" --dtype "$t" "$TQ/nan.safetensors" out.gguf
			assert_failure 4
			assert_equal "$stderr" "fmt-convert: error: $TQ/nan.safetensors: tensor 'big.weight': element 300001 is NaN; cannot quantize to $name"
			nothing_written out.gguf
		done
	done
}
