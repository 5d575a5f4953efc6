#!/usr/bin/env bats
# Every malformed case of specs/gguf.md §16 and Appendix A, the two reference gaps, and split-set failures: exact exit status and message.
# Generated from scripts/gen/gguf-malformed cases.tsv; one test per case.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	export CASES="$BATS_FILE_TMPDIR/cases"
	"$REPO_ROOT/scripts/gen/gguf-malformed" "$CASES" >/dev/null
	verify_cases "$CASES"
}

@test "good_example.gguf: exit 0" {
	check_verified "$CASES" good_example.gguf
}

@test "good_v2.gguf: exit 0" {
	check_verified "$CASES" good_v2.gguf
}

@test "good_empty_u32_array.gguf: exit 0" {
	check_verified "$CASES" good_empty_u32_array.gguf
}

@test "good_align16.gguf: exit 0" {
	check_verified "$CASES" good_align16.gguf
}

@test "good_name63.gguf: exit 0" {
	check_verified "$CASES" good_name63.gguf
}

@test "good_empty_name.gguf: exit 0" {
	check_verified "$CASES" good_empty_name.gguf
}

@test "good_scalar.gguf: exit 0" {
	check_verified "$CASES" good_scalar.gguf
}

@test "good_empty_tensor.gguf: exit 0" {
	check_verified "$CASES" good_empty_tensor.gguf
}

@test "good_trailing_bytes.gguf: exit 0" {
	check_verified "$CASES" good_trailing_bytes.gguf
}

@test "good_no_final_padding.gguf: exit 0" {
	check_verified "$CASES" good_no_final_padding.gguf
}

@test "accepted_no_info_padding.gguf: exit 0" {
	check_verified "$CASES" accepted_no_info_padding.gguf
}

@test "good_utf8_invalid_value.gguf: exit 0" {
	check_verified "$CASES" good_utf8_invalid_value.gguf
}

@test "good_all_types.gguf: exit 0" {
	check_verified "$CASES" good_all_types.gguf
}

@test "good_q8_0.gguf: exit 0" {
	check_verified "$CASES" good_q8_0.gguf
}

@test "good_all_block_types.gguf: exit 0" {
	check_verified "$CASES" good_all_block_types.gguf
}

@test "bad_magic.gguf: exit 4" {
	check_verified "$CASES" bad_magic.gguf
}

@test "bad_version0.gguf: exit 5" {
	check_verified "$CASES" bad_version0.gguf
}

@test "bad_version1.gguf: exit 5" {
	check_verified "$CASES" bad_version1.gguf
}

@test "bad_version4.gguf: exit 5" {
	check_verified "$CASES" bad_version4.gguf
}

@test "bad_version_bigendian.gguf: exit 5" {
	check_verified "$CASES" bad_version_bigendian.gguf
}

@test "bad_truncated_header.gguf: exit 4" {
	check_verified "$CASES" bad_truncated_header.gguf
}

@test "bad_empty_file.gguf: exit 4" {
	check_verified "$CASES" bad_empty_file.gguf
}

@test "bad_tensor_count_negative.gguf: exit 4" {
	check_verified "$CASES" bad_tensor_count_negative.gguf
}

@test "bad_tensor_count_huge.gguf: exit 4" {
	check_verified "$CASES" bad_tensor_count_huge.gguf
}

@test "bad_kv_count_negative.gguf: exit 4" {
	check_verified "$CASES" bad_kv_count_negative.gguf
}

@test "bad_kv_count_huge.gguf: exit 4" {
	check_verified "$CASES" bad_kv_count_huge.gguf
}

@test "bad_key_length_max.gguf: exit 4" {
	check_verified "$CASES" bad_key_length_max.gguf
}

@test "bad_key_length_past_eof.gguf: exit 4" {
	check_verified "$CASES" bad_key_length_past_eof.gguf
}

@test "bad_key_empty.gguf: exit 4" {
	check_verified "$CASES" bad_key_empty.gguf
}

@test "bad_key_duplicate.gguf: exit 4" {
	check_verified "$CASES" bad_key_duplicate.gguf
}

@test "bad_key_utf8.gguf: exit 4" {
	check_verified "$CASES" bad_key_utf8.gguf
}

@test "bad_key_control.gguf: exit 4" {
	check_verified "$CASES" bad_key_control.gguf
}

@test "bad_string_length_2p31.gguf: exit 4" {
	check_verified "$CASES" bad_string_length_2p31.gguf
}

@test "bad_value_type_13.gguf: exit 4" {
	check_verified "$CASES" bad_value_type_13.gguf
}

@test "bad_value_type_ffffffff.gguf: exit 4" {
	check_verified "$CASES" bad_value_type_ffffffff.gguf
}

@test "good_array_nested.gguf: exit 0" {
	check_verified "$CASES" good_array_nested.gguf
}

@test "bad_array_nested_too_deep.gguf: exit 4" {
	check_verified "$CASES" bad_array_nested_too_deep.gguf
}

@test "bad_array_count_2p62.gguf: exit 4" {
	check_verified "$CASES" bad_array_count_2p62.gguf
}

@test "bad_array_count_past_eof.gguf: exit 4" {
	check_verified "$CASES" bad_array_count_past_eof.gguf
}

@test "bad_array_strings_2p40.gguf: exit 4" {
	check_verified "$CASES" bad_array_strings_2p40.gguf
}

@test "bad_array_elem_type_13.gguf: exit 4" {
	check_verified "$CASES" bad_array_elem_type_13.gguf
}

@test "bad_bool_2.gguf: exit 4" {
	check_verified "$CASES" bad_bool_2.gguf
}

@test "bad_alignment_u64.gguf: exit 4" {
	check_verified "$CASES" bad_alignment_u64.gguf
}

@test "bad_alignment_0.gguf: exit 4" {
	check_verified "$CASES" bad_alignment_0.gguf
}

@test "bad_alignment_48.gguf: exit 4" {
	check_verified "$CASES" bad_alignment_48.gguf
}

@test "bad_alignment_huge.gguf: exit 4" {
	check_verified "$CASES" bad_alignment_huge.gguf
}

@test "bad_name_64.gguf: exit 4" {
	check_verified "$CASES" bad_name_64.gguf
}

@test "bad_name_duplicate.gguf: exit 4" {
	check_verified "$CASES" bad_name_duplicate.gguf
}

@test "bad_name_nul.gguf: exit 4" {
	check_verified "$CASES" bad_name_nul.gguf
}

@test "bad_name_utf8.gguf: exit 4" {
	check_verified "$CASES" bad_name_utf8.gguf
}

@test "bad_n_dims_5.gguf: exit 4" {
	check_verified "$CASES" bad_n_dims_5.gguf
}

@test "bad_n_dims_ffffffff.gguf: exit 4" {
	check_verified "$CASES" bad_n_dims_ffffffff.gguf
}

@test "bad_ne_negative.gguf: exit 4" {
	check_verified "$CASES" bad_ne_negative.gguf
}

@test "bad_dims_wrap_to_zero.gguf: exit 4" {
	check_verified "$CASES" bad_dims_wrap_to_zero.gguf
}

@test "bad_q8_0_2p62.gguf: exit 4" {
	check_verified "$CASES" bad_q8_0_2p62.gguf
}

@test "bad_type_4.gguf: exit 5" {
	check_verified "$CASES" bad_type_4.gguf
}

@test "bad_type_31.gguf: exit 5" {
	check_verified "$CASES" bad_type_31.gguf
}

@test "bad_type_43.gguf: exit 5" {
	check_verified "$CASES" bad_type_43.gguf
}

@test "bad_type_minus1.gguf: exit 5" {
	check_verified "$CASES" bad_type_minus1.gguf
}

@test "bad_q8_0_ne0_3.gguf: exit 4" {
	check_verified "$CASES" bad_q8_0_ne0_3.gguf
}

@test "bad_offset_misaligned.gguf: exit 4" {
	check_verified "$CASES" bad_offset_misaligned.gguf
}

@test "bad_offset_gap.gguf: exit 4" {
	check_verified "$CASES" bad_offset_gap.gguf
}

@test "bad_offset_overlap.gguf: exit 4" {
	check_verified "$CASES" bad_offset_overlap.gguf
}

@test "bad_offset_wrap.gguf: exit 4" {
	check_verified "$CASES" bad_offset_wrap.gguf
}

@test "bad_tensor_truncated.gguf: exit 4" {
	check_verified "$CASES" bad_tensor_truncated.gguf
}

@test "bad_infos_truncated.gguf: exit 4" {
	check_verified "$CASES" bad_infos_truncated.gguf
}

@test "split-00001-of-00003.gguf: exit 0" {
	check_verified "$CASES" split-00001-of-00003.gguf
}

@test "split-00002-of-00003.gguf: exit 0" {
	check_verified "$CASES" split-00002-of-00003.gguf
}

@test "split-00003-of-00003.gguf: exit 0" {
	check_verified "$CASES" split-00003-of-00003.gguf
}

@test "split_missing-00001-of-00002.gguf: exit 9" {
	check_verified "$CASES" split_missing-00001-of-00002.gguf
}

@test "split_badno-00001-of-00002.gguf: exit 9" {
	check_verified "$CASES" split_badno-00001-of-00002.gguf
}

@test "split_badno-00002-of-00002.gguf: exit 9" {
	check_verified "$CASES" split_badno-00002-of-00002.gguf
}

@test "split_badtype-00001-of-00002.gguf: exit 9" {
	check_verified "$CASES" split_badtype-00001-of-00002.gguf
}

@test "split_badtype-00002-of-00002.gguf: exit 9" {
	check_verified "$CASES" split_badtype-00002-of-00002.gguf
}

@test "split_badtotal-00001-of-00002.gguf: exit 9" {
	check_verified "$CASES" split_badtotal-00001-of-00002.gguf
}

@test "split_badtotal-00002-of-00002.gguf: exit 9" {
	check_verified "$CASES" split_badtotal-00002-of-00002.gguf
}

@test "split_dup-00001-of-00002.gguf: exit 9" {
	check_verified "$CASES" split_dup-00001-of-00002.gguf
}

@test "split_dup-00002-of-00002.gguf: exit 9" {
	check_verified "$CASES" split_dup-00002-of-00002.gguf
}

@test "split_gap-00001-of-00003.gguf: exit 9" {
	check_verified "$CASES" split_gap-00001-of-00003.gguf
}

@test "split_gap-00003-of-00003.gguf: exit 9" {
	check_verified "$CASES" split_gap-00003-of-00003.gguf
}

@test "split_lone-00003-of-00003.gguf: exit 9" {
	check_verified "$CASES" split_lone-00003-of-00003.gguf
}

@test "split_renamed.gguf: exit 9" {
	check_verified "$CASES" split_renamed.gguf
}

@test "split_one_renamed.gguf: exit 0" {
	check_verified "$CASES" split_one_renamed.gguf
}
