#!/usr/bin/env bats
# Issue 26: start-up. A tool maps libc and libm only: XXH3 is compiled into libcommon, and
# libarchive (with libxml2, ICU and the rest behind it), libcrypto and libsnappy (with
# libstdc++) are loaded on first use, not linked: no tool maps them to print its version, and
# the paths that need them (a tar bundle, a SHA-256 digest) still work.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
}

@test "no tool links libarchive, libcrypto, libxml2, ICU, libsnappy or libstdc++; --version loads none of them" {
	for t in fmt-inspect fmt-verify fmt-sign fmt-shard fmt-convert fmt-watermark nk-run; do
		run ldd "$FMTKIT_BIN/$t"
		assert_success
		refute_output --regexp 'libarchive|libcrypto|libxml2|libicu|libsnappy|libstdc'
		# the small libraries come from their archives (LINK_STATIC, the default)
		refute_output --regexp 'libzstd|liblz4|libsodium|libjansson|libmsgpackc|libz\.so|libprotobuf-c'
		# XXH3 is compiled into libcommon (core/xxh3.c), not linked
		refute_output --partial 'libxxhash'
		# libm, libc; and libgcc_s in a sanitizer build (make asan), for its runtime's unwinder
		local libs=2
		grep -q __asan_init "$FMTKIT_BIN/$t" && libs=3 && assert_output --partial libgcc_s
		assert_equal "$(grep -c '=>' <<<"$output")" "$libs"
		run env LD_DEBUG=files "$FMTKIT_BIN/$t" --version
		assert_success
		refute_output --regexp 'file=lib(archive|crypto|xml2|icu|snappy|stdc)'
	done
}

@test "the first bundle and the first digest load libarchive and libcrypto, once" {
	make_samples
	cp "$SAMPLES/tiny.safetensors" m.safetensors
	fmt-shard pack -q m.safetensors -o b.tar
	run env LD_DEBUG=files fmt-verify b.tar
	assert_success
	assert_equal "$(grep -c 'file=libarchive.so.13 \[0\];  needed by' <<<"$output")" 0
	assert_equal "$(grep -c 'file=libarchive.so.13 \[0\];  dynamically loaded by' <<<"$output")" 1
	assert_equal "$(grep -c 'file=libcrypto.so.3 \[0\];  dynamically loaded by' <<<"$output")" 1
	assert_line --partial 'b.tar: ok'
}

@test "the first SNAPPY Parquet page loads libsnappy, once, when it is written and when it is read" {
	printf 'a,b\n1,x\n2,y\n3,x\n' >d.csv
	run env LD_DEBUG=files fmt-convert -c snappy d.csv d.parquet
	assert_success
	assert_equal "$(grep -c 'file=libsnappy.so.1 \[0\];  dynamically loaded by' <<<"$output")" 1
	run env LD_DEBUG=files fmt-convert --to csv d.parquet -
	assert_success
	assert_equal "$(grep -c 'file=libsnappy.so.1 \[0\];  dynamically loaded by' <<<"$output")" 1
	assert_equal "$(grep -c 'file=libsnappy.so.1 \[0\];  needed by' <<<"$output")" 0
	run --separate-stderr fmt-convert --to csv d.parquet -
	assert_output "$(printf 'a,b\n1,x\n2,y\n3,x')"
}
