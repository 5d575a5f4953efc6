#!/usr/bin/env bats
# Every malformed case of specs/safetensors.md §9 and the shard-set failures, each its own file and test: exact exit status and message.
# Generated from scripts/gen/safetensors-malformed cases.tsv; one test per case.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	export CASES="$BATS_FILE_TMPDIR/cases"
	"$REPO_ROOT/scripts/gen/safetensors-malformed" "$CASES" >/dev/null
	verify_cases "$CASES"
}

@test "good-worked-example.safetensors: exit 0" {
	check_verified "$CASES" good-worked-example.safetensors
}

@test "good-ref-attn.0.safetensors: exit 0" {
	check_verified "$CASES" good-ref-attn.0.safetensors
}

@test "good-ref-attn0.safetensors: exit 0" {
	check_verified "$CASES" good-ref-attn0.safetensors
}

@test "good-empty.safetensors: exit 0" {
	check_verified "$CASES" good-empty.safetensors
}

@test "good-empty-metadata.safetensors: exit 0" {
	check_verified "$CASES" good-empty-metadata.safetensors
}

@test "good-trailing-whitespace.safetensors: exit 0" {
	check_verified "$CASES" good-trailing-whitespace.safetensors
}

@test "good-scalar-and-empty.safetensors: exit 0" {
	check_verified "$CASES" good-scalar-and-empty.safetensors
}

@test "header-too-small.safetensors: exit 4" {
	check_verified "$CASES" header-too-small.safetensors
}

@test "header-empty.safetensors: exit 4" {
	check_verified "$CASES" header-empty.safetensors
}

@test "header-too-large.safetensors: exit 4" {
	check_verified "$CASES" header-too-large.safetensors
}

@test "header-length-overflow.safetensors: exit 4" {
	check_verified "$CASES" header-length-overflow.safetensors
}

@test "header-past-eof.safetensors: exit 4" {
	check_verified "$CASES" header-past-eof.safetensors
}

@test "header-not-utf8.safetensors: exit 4" {
	check_verified "$CASES" header-not-utf8.safetensors
}

@test "header-overlong-utf8.safetensors: exit 4" {
	check_verified "$CASES" header-overlong-utf8.safetensors
}

@test "header-utf8-surrogate.safetensors: exit 4" {
	check_verified "$CASES" header-utf8-surrogate.safetensors
}

@test "header-not-object.safetensors: exit 4" {
	check_verified "$CASES" header-not-object.safetensors
}

@test "header-trailing-garbage.safetensors: exit 4" {
	check_verified "$CASES" header-trailing-garbage.safetensors
}

@test "header-two-objects.safetensors: exit 4" {
	check_verified "$CASES" header-two-objects.safetensors
}

@test "header-unterminated.safetensors: exit 4" {
	check_verified "$CASES" header-unterminated.safetensors
}

@test "header-nul-padding.safetensors: exit 4" {
	check_verified "$CASES" header-nul-padding.safetensors
}

@test "json-nesting-deep.safetensors: exit 4" {
	check_verified "$CASES" json-nesting-deep.safetensors
}

@test "json-nesting-200.safetensors: exit 4" {
	check_verified "$CASES" json-nesting-200.safetensors
}

@test "number-negative.safetensors: exit 4" {
	check_verified "$CASES" number-negative.safetensors
}

@test "number-negative-zero.safetensors: exit 4" {
	check_verified "$CASES" number-negative-zero.safetensors
}

@test "number-fraction.safetensors: exit 4" {
	check_verified "$CASES" number-fraction.safetensors
}

@test "number-exponent.safetensors: exit 4" {
	check_verified "$CASES" number-exponent.safetensors
}

@test "number-leading-zero.safetensors: exit 4" {
	check_verified "$CASES" number-leading-zero.safetensors
}

@test "number-plus-sign.safetensors: exit 4" {
	check_verified "$CASES" number-plus-sign.safetensors
}

@test "number-above-u64.safetensors: exit 4" {
	check_verified "$CASES" number-above-u64.safetensors
}

@test "number-above-i64.safetensors: exit 4" {
	check_verified "$CASES" number-above-i64.safetensors
}

@test "string-lone-surrogate.safetensors: exit 4" {
	check_verified "$CASES" string-lone-surrogate.safetensors
}

@test "string-raw-control.safetensors: exit 4" {
	check_verified "$CASES" string-raw-control.safetensors
}

@test "string-nul-escape.safetensors: exit 4" {
	check_verified "$CASES" string-nul-escape.safetensors
}

@test "leading-whitespace.safetensors: exit 4" {
	check_verified "$CASES" leading-whitespace.safetensors
}

@test "leading-bom.safetensors: exit 4" {
	check_verified "$CASES" leading-bom.safetensors
}

@test "metadata-not-object.safetensors: exit 4" {
	check_verified "$CASES" metadata-not-object.safetensors
}

@test "metadata-non-string-value.safetensors: exit 4" {
	check_verified "$CASES" metadata-non-string-value.safetensors
}

@test "metadata-null-value.safetensors: exit 4" {
	check_verified "$CASES" metadata-null-value.safetensors
}

@test "metadata-repeated.safetensors: exit 4" {
	check_verified "$CASES" metadata-repeated.safetensors
}

@test "duplicate-tensor-name.safetensors: exit 4" {
	check_verified "$CASES" duplicate-tensor-name.safetensors
}

@test "duplicate-field.safetensors: exit 4" {
	check_verified "$CASES" duplicate-field.safetensors
}

@test "tensor-not-object.safetensors: exit 4" {
	check_verified "$CASES" tensor-not-object.safetensors
}

@test "tensor-missing-dtype.safetensors: exit 4" {
	check_verified "$CASES" tensor-missing-dtype.safetensors
}

@test "tensor-missing-shape.safetensors: exit 4" {
	check_verified "$CASES" tensor-missing-shape.safetensors
}

@test "tensor-missing-data-offsets.safetensors: exit 4" {
	check_verified "$CASES" tensor-missing-data-offsets.safetensors
}

@test "dtype-unknown.safetensors: exit 4" {
	check_verified "$CASES" dtype-unknown.safetensors
}

@test "dtype-lowercase.safetensors: exit 4" {
	check_verified "$CASES" dtype-lowercase.safetensors
}

@test "dtype-ggml-name.safetensors: exit 4" {
	check_verified "$CASES" dtype-ggml-name.safetensors
}

@test "dtype-not-string.safetensors: exit 4" {
	check_verified "$CASES" dtype-not-string.safetensors
}

@test "shape-not-array.safetensors: exit 4" {
	check_verified "$CASES" shape-not-array.safetensors
}

@test "shape-string-item.safetensors: exit 4" {
	check_verified "$CASES" shape-string-item.safetensors
}

@test "data-offsets-three.safetensors: exit 4" {
	check_verified "$CASES" data-offsets-three.safetensors
}

@test "data-offsets-one.safetensors: exit 4" {
	check_verified "$CASES" data-offsets-one.safetensors
}

@test "data-offsets-not-integers.safetensors: exit 4" {
	check_verified "$CASES" data-offsets-not-integers.safetensors
}

@test "extra-field.safetensors: exit 4" {
	check_verified "$CASES" extra-field.safetensors
}

@test "rank-too-large.safetensors: exit 5" {
	check_verified "$CASES" rank-too-large.safetensors
}

@test "element-count-overflow.safetensors: exit 4" {
	check_verified "$CASES" element-count-overflow.safetensors
}

@test "byte-size-overflow.safetensors: exit 4" {
	check_verified "$CASES" byte-size-overflow.safetensors
}

@test "f4-odd-elements.safetensors: exit 4" {
	check_verified "$CASES" f4-odd-elements.safetensors
}

@test "f6-misaligned.safetensors: exit 4" {
	check_verified "$CASES" f6-misaligned.safetensors
}

@test "first-begin-nonzero.safetensors: exit 4" {
	check_verified "$CASES" first-begin-nonzero.safetensors
}

@test "offsets-hole.safetensors: exit 4" {
	check_verified "$CASES" offsets-hole.safetensors
}

@test "offsets-overlap.safetensors: exit 4" {
	check_verified "$CASES" offsets-overlap.safetensors
}

@test "offsets-end-before-begin.safetensors: exit 4" {
	check_verified "$CASES" offsets-end-before-begin.safetensors
}

@test "offsets-size-mismatch.safetensors: exit 4" {
	check_verified "$CASES" offsets-size-mismatch.safetensors
}

@test "data-truncated.safetensors: exit 4" {
	check_verified "$CASES" data-truncated.safetensors
}

@test "data-trailing-bytes.safetensors: exit 4" {
	check_verified "$CASES" data-trailing-bytes.safetensors
}

@test "data-polyglot-zip.safetensors: exit 4" {
	check_verified "$CASES" data-polyglot-zip.safetensors
}

@test "good-sharded/model.safetensors.index.json: exit 0" {
	check_verified "$CASES" good-sharded/model.safetensors.index.json
}

@test "index-unsafe-slash/model.safetensors.index.json: exit 4" {
	check_verified "$CASES" index-unsafe-slash/model.safetensors.index.json
}

@test "index-unsafe-backslash/model.safetensors.index.json: exit 4" {
	check_verified "$CASES" index-unsafe-backslash/model.safetensors.index.json
}

@test "index-unsafe-dotdot/model.safetensors.index.json: exit 4" {
	check_verified "$CASES" index-unsafe-dotdot/model.safetensors.index.json
}

@test "index-unsafe-empty/model.safetensors.index.json: exit 4" {
	check_verified "$CASES" index-unsafe-empty/model.safetensors.index.json
}

@test "index-missing-shard/model.safetensors.index.json: exit 9" {
	check_verified "$CASES" index-missing-shard/model.safetensors.index.json
}

@test "index-tensor-wrong-shard/model.safetensors.index.json: exit 9" {
	check_verified "$CASES" index-tensor-wrong-shard/model.safetensors.index.json
}

@test "index-tensor-in-two-shards/model.safetensors.index.json: exit 9" {
	check_verified "$CASES" index-tensor-in-two-shards/model.safetensors.index.json
}

@test "index-tensor-not-in-map/model.safetensors.index.json: exit 9" {
	check_verified "$CASES" index-tensor-not-in-map/model.safetensors.index.json
}

@test "index-map-names-absent-tensor/model.safetensors.index.json: exit 9" {
	check_verified "$CASES" index-map-names-absent-tensor/model.safetensors.index.json
}

@test "index-total-size-mismatch/model.safetensors.index.json: exit 9" {
	check_verified "$CASES" index-total-size-mismatch/model.safetensors.index.json
}

@test "index-bad-shard/model.safetensors.index.json: exit 4" {
	check_verified "$CASES" index-bad-shard/model.safetensors.index.json
}

@test "index-no-weight-map/model.safetensors.index.json: exit 4" {
	check_verified "$CASES" index-no-weight-map/model.safetensors.index.json
}

@test "index-weight-map-not-object/model.safetensors.index.json: exit 4" {
	check_verified "$CASES" index-weight-map-not-object/model.safetensors.index.json
}

@test "index-duplicate-tensor/model.safetensors.index.json: exit 4" {
	check_verified "$CASES" index-duplicate-tensor/model.safetensors.index.json
}

