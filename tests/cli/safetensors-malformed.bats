#!/usr/bin/env bats
# Every malformed case of specs/safetensors.md §9 (and the shard-set failures) as its own file
# (scripts/gen/safetensors-malformed) and its own test: exact exit status and the message.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	export MAL="$BATS_FILE_TMPDIR/malformed"
	"$REPO_ROOT/scripts/gen/safetensors-malformed" "$MAL" >/dev/null
}

setup() {
	load helpers
}

# check_case FILE: fmt-verify exits as cases.tsv says and stderr carries its message.
check_case() {
	local line exit_want msg
	line=$(awk -F'\t' -v f="$1" '$1 == f' "$MAL/cases.tsv")
	[ -n "$line" ] || fail "no case $1 in cases.tsv"
	exit_want=$(printf '%s' "$line" | cut -f2)
	msg=$(printf '%s' "$line" | cut -f3)
	run --separate-stderr fmt-verify "$MAL/$1"
	[ "$status" -eq "$exit_want" ] || fail "exit $status, expected $exit_want; stderr: $stderr"
	if [ "$exit_want" -eq 0 ]; then
		[[ "$output" == *": ok ("* ]] || fail "no ok line: $output"
	else
		[[ "$stderr" == *"$msg"* ]] || fail "stderr lacks '$msg': $stderr"
		[ -z "$output" ] || fail "stdout not empty: $output"
	fi
}

@test "good-worked-example.safetensors: exit 0" {
	check_case good-worked-example.safetensors
}

@test "good-ref-attn.0.safetensors: exit 0" {
	check_case good-ref-attn.0.safetensors
}

@test "good-ref-attn0.safetensors: exit 0" {
	check_case good-ref-attn0.safetensors
}

@test "good-empty.safetensors: exit 0" {
	check_case good-empty.safetensors
}

@test "good-empty-metadata.safetensors: exit 0" {
	check_case good-empty-metadata.safetensors
}

@test "good-trailing-whitespace.safetensors: exit 0" {
	check_case good-trailing-whitespace.safetensors
}

@test "good-scalar-and-empty.safetensors: exit 0" {
	check_case good-scalar-and-empty.safetensors
}

@test "header-too-small.safetensors: exit 4" {
	check_case header-too-small.safetensors
}

@test "header-empty.safetensors: exit 4" {
	check_case header-empty.safetensors
}

@test "header-too-large.safetensors: exit 4" {
	check_case header-too-large.safetensors
}

@test "header-length-overflow.safetensors: exit 4" {
	check_case header-length-overflow.safetensors
}

@test "header-past-eof.safetensors: exit 4" {
	check_case header-past-eof.safetensors
}

@test "header-not-utf8.safetensors: exit 4" {
	check_case header-not-utf8.safetensors
}

@test "header-overlong-utf8.safetensors: exit 4" {
	check_case header-overlong-utf8.safetensors
}

@test "header-utf8-surrogate.safetensors: exit 4" {
	check_case header-utf8-surrogate.safetensors
}

@test "header-not-object.safetensors: exit 4" {
	check_case header-not-object.safetensors
}

@test "header-trailing-garbage.safetensors: exit 4" {
	check_case header-trailing-garbage.safetensors
}

@test "header-two-objects.safetensors: exit 4" {
	check_case header-two-objects.safetensors
}

@test "header-unterminated.safetensors: exit 4" {
	check_case header-unterminated.safetensors
}

@test "header-nul-padding.safetensors: exit 4" {
	check_case header-nul-padding.safetensors
}

@test "json-nesting-deep.safetensors: exit 4" {
	check_case json-nesting-deep.safetensors
}

@test "json-nesting-200.safetensors: exit 4" {
	check_case json-nesting-200.safetensors
}

@test "number-negative.safetensors: exit 4" {
	check_case number-negative.safetensors
}

@test "number-negative-zero.safetensors: exit 4" {
	check_case number-negative-zero.safetensors
}

@test "number-fraction.safetensors: exit 4" {
	check_case number-fraction.safetensors
}

@test "number-exponent.safetensors: exit 4" {
	check_case number-exponent.safetensors
}

@test "number-leading-zero.safetensors: exit 4" {
	check_case number-leading-zero.safetensors
}

@test "number-plus-sign.safetensors: exit 4" {
	check_case number-plus-sign.safetensors
}

@test "number-above-u64.safetensors: exit 4" {
	check_case number-above-u64.safetensors
}

@test "number-above-i64.safetensors: exit 4" {
	check_case number-above-i64.safetensors
}

@test "string-lone-surrogate.safetensors: exit 4" {
	check_case string-lone-surrogate.safetensors
}

@test "string-raw-control.safetensors: exit 4" {
	check_case string-raw-control.safetensors
}

@test "string-nul-escape.safetensors: exit 4" {
	check_case string-nul-escape.safetensors
}

@test "leading-whitespace.safetensors: exit 4" {
	check_case leading-whitespace.safetensors
}

@test "leading-bom.safetensors: exit 4" {
	check_case leading-bom.safetensors
}

@test "metadata-not-object.safetensors: exit 4" {
	check_case metadata-not-object.safetensors
}

@test "metadata-non-string-value.safetensors: exit 4" {
	check_case metadata-non-string-value.safetensors
}

@test "metadata-null-value.safetensors: exit 4" {
	check_case metadata-null-value.safetensors
}

@test "metadata-repeated.safetensors: exit 4" {
	check_case metadata-repeated.safetensors
}

@test "duplicate-tensor-name.safetensors: exit 4" {
	check_case duplicate-tensor-name.safetensors
}

@test "duplicate-field.safetensors: exit 4" {
	check_case duplicate-field.safetensors
}

@test "tensor-not-object.safetensors: exit 4" {
	check_case tensor-not-object.safetensors
}

@test "tensor-missing-dtype.safetensors: exit 4" {
	check_case tensor-missing-dtype.safetensors
}

@test "tensor-missing-shape.safetensors: exit 4" {
	check_case tensor-missing-shape.safetensors
}

@test "tensor-missing-data-offsets.safetensors: exit 4" {
	check_case tensor-missing-data-offsets.safetensors
}

@test "dtype-unknown.safetensors: exit 4" {
	check_case dtype-unknown.safetensors
}

@test "dtype-lowercase.safetensors: exit 4" {
	check_case dtype-lowercase.safetensors
}

@test "dtype-ggml-name.safetensors: exit 4" {
	check_case dtype-ggml-name.safetensors
}

@test "dtype-not-string.safetensors: exit 4" {
	check_case dtype-not-string.safetensors
}

@test "shape-not-array.safetensors: exit 4" {
	check_case shape-not-array.safetensors
}

@test "shape-string-item.safetensors: exit 4" {
	check_case shape-string-item.safetensors
}

@test "data-offsets-three.safetensors: exit 4" {
	check_case data-offsets-three.safetensors
}

@test "data-offsets-one.safetensors: exit 4" {
	check_case data-offsets-one.safetensors
}

@test "data-offsets-not-integers.safetensors: exit 4" {
	check_case data-offsets-not-integers.safetensors
}

@test "extra-field.safetensors: exit 4" {
	check_case extra-field.safetensors
}

@test "rank-too-large.safetensors: exit 5" {
	check_case rank-too-large.safetensors
}

@test "element-count-overflow.safetensors: exit 4" {
	check_case element-count-overflow.safetensors
}

@test "byte-size-overflow.safetensors: exit 4" {
	check_case byte-size-overflow.safetensors
}

@test "f4-odd-elements.safetensors: exit 4" {
	check_case f4-odd-elements.safetensors
}

@test "f6-misaligned.safetensors: exit 4" {
	check_case f6-misaligned.safetensors
}

@test "first-begin-nonzero.safetensors: exit 4" {
	check_case first-begin-nonzero.safetensors
}

@test "offsets-hole.safetensors: exit 4" {
	check_case offsets-hole.safetensors
}

@test "offsets-overlap.safetensors: exit 4" {
	check_case offsets-overlap.safetensors
}

@test "offsets-end-before-begin.safetensors: exit 4" {
	check_case offsets-end-before-begin.safetensors
}

@test "offsets-size-mismatch.safetensors: exit 4" {
	check_case offsets-size-mismatch.safetensors
}

@test "data-truncated.safetensors: exit 4" {
	check_case data-truncated.safetensors
}

@test "data-trailing-bytes.safetensors: exit 4" {
	check_case data-trailing-bytes.safetensors
}

@test "data-polyglot-zip.safetensors: exit 4" {
	check_case data-polyglot-zip.safetensors
}

@test "good-sharded/model.safetensors.index.json: exit 0" {
	check_case good-sharded/model.safetensors.index.json
}

@test "index-unsafe-slash/model.safetensors.index.json: exit 4" {
	check_case index-unsafe-slash/model.safetensors.index.json
}

@test "index-unsafe-backslash/model.safetensors.index.json: exit 4" {
	check_case index-unsafe-backslash/model.safetensors.index.json
}

@test "index-unsafe-dotdot/model.safetensors.index.json: exit 4" {
	check_case index-unsafe-dotdot/model.safetensors.index.json
}

@test "index-unsafe-empty/model.safetensors.index.json: exit 4" {
	check_case index-unsafe-empty/model.safetensors.index.json
}

@test "index-missing-shard/model.safetensors.index.json: exit 9" {
	check_case index-missing-shard/model.safetensors.index.json
}

@test "index-tensor-wrong-shard/model.safetensors.index.json: exit 9" {
	check_case index-tensor-wrong-shard/model.safetensors.index.json
}

@test "index-tensor-in-two-shards/model.safetensors.index.json: exit 9" {
	check_case index-tensor-in-two-shards/model.safetensors.index.json
}

@test "index-tensor-not-in-map/model.safetensors.index.json: exit 9" {
	check_case index-tensor-not-in-map/model.safetensors.index.json
}

@test "index-map-names-absent-tensor/model.safetensors.index.json: exit 9" {
	check_case index-map-names-absent-tensor/model.safetensors.index.json
}

@test "index-total-size-mismatch/model.safetensors.index.json: exit 9" {
	check_case index-total-size-mismatch/model.safetensors.index.json
}

@test "index-bad-shard/model.safetensors.index.json: exit 4" {
	check_case index-bad-shard/model.safetensors.index.json
}

@test "index-no-weight-map/model.safetensors.index.json: exit 4" {
	check_case index-no-weight-map/model.safetensors.index.json
}

@test "index-weight-map-not-object/model.safetensors.index.json: exit 4" {
	check_case index-weight-map-not-object/model.safetensors.index.json
}

@test "index-duplicate-tensor/model.safetensors.index.json: exit 4" {
	check_case index-duplicate-tensor/model.safetensors.index.json
}

