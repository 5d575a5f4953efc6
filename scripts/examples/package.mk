# package.mk: package a safetensors model as a signed GGUF q8_0 shard set and a signed bundle,
# with fmtkit's tools, under make. A worked example (fmtkit(7), PACKAGING WITH MAKE); copy it
# and change the variables.
#
#   make -f package.mk MODEL=tiny.safetensors SECKEY=release.key PUBKEY=release.pub -j4
#
# What it makes, in OUT (default: dist):
#
#   NAME.q8_0.gguf                  the model converted to GGUF, q8_0 (fmt-convert)
#   NAME.shards.mk                  SHARDS := the names the split writes (fmt-shard split --list)
#   NAME-0000i-of-0000N.gguf        the shard set (fmt-shard split, SHARD_TENSORS per shard)
#   NAME-0000i-of-0000N.gguf.minisig  one signature per shard, one job each (fmt-sign sign)
#   NAME.set.verified               the set checked with PUBKEY (fmt-verify -p): the report
#   NAME.tar.zst, NAME.tar.zst.minisig  the bundle, shards and signatures inside, and its signature
#   NAME.verified                   the final check of the set and the bundle: the report
#
# `make -f package.mk` builds NAME.verified; `make -f package.mk verify` checks everything again
# (always runs); `make -f package.mk clean` removes OUT's files for NAME.
#
# Why it is safe to interrupt and to run in parallel:
# * every tool writes its output under a temporary name and renames it into place, so no target
#   is ever half-written; the recipes whose output is a report do the same (into_target);
# * .DELETE_ON_ERROR: a recipe that fails leaves no target that looks up to date, and make
#   removes the target of a recipe it interrupts (SIGINT, SIGTERM);
# * the split writes every shard in one recipe (a grouped target, &:), run once however many
#   jobs make runs; each signature is its own job, started only after the split;
# * a shard's signature depends on the GGUF the shard is cut from, not on the shard file: a
#   shard changed after the split is never signed again, and the set check stops the build
#   (fmt-verify exit 7) before it is bundled.
#
# The shard names depend on the model (how many tensors, SHARD_TENSORS); make learns them from
# NAME.shards.mk, an included makefile it remakes (after the GGUF) and then restarts with.

MODEL ?= model.safetensors
NAME ?= $(basename $(notdir $(MODEL)))
OUT ?= dist
SECKEY ?= release.key
PUBKEY ?= release.pub
# Tensors per shard (GGUF's usual unit; gguf-split's default is 128).
SHARD_TENSORS ?= 128
# e.g. --passphrase-file release.pass for a secret key stored under a passphrase
SIGN_FLAGS ?=
# Where the tools are (empty: on PATH); each tool can also be replaced on its own.
BIN ?=
FMT_CONVERT ?= $(BIN:%=%/)fmt-convert
FMT_SHARD ?= $(BIN:%=%/)fmt-shard
FMT_SIGN ?= $(BIN:%=%/)fmt-sign
FMT_VERIFY ?= $(BIN:%=%/)fmt-verify

GGUF := $(OUT)/$(NAME).q8_0.gguf
PREFIX := $(OUT)/$(NAME)
LIST := $(OUT)/$(NAME).shards.mk
BUNDLE := $(OUT)/$(NAME).tar.zst
SET_REPORT := $(OUT)/$(NAME).set.verified
REPORT := $(OUT)/$(NAME).verified

.DELETE_ON_ERROR:
.SUFFIXES:
.PHONY: all verify clean

all: $(REPORT)

$(GGUF): $(MODEL)
	@mkdir -p $(OUT)
	$(FMT_CONVERT) -q -f --dtype q8_0 $< $@

# $(call into_target,COMMAND): COMMAND's standard output becomes the target, renamed into place
# only when COMMAND succeeded (its exit status kept; no old target, no temporary file left).
into_target = rm -f $@; $(1) >$@.tmp || { status=$$?; rm -f $@.tmp; exit $$status; }; mv $@.tmp $@

$(LIST): $(GGUF)
	$(call into_target,{ printf 'SHARDS :='; $(FMT_SHARD) split --list --max-tensors $(SHARD_TENSORS) -o $(PREFIX) $< | sed 's/^/ /' | tr -d '\n'; echo; })

ifneq ($(MAKECMDGOALS),clean)
-include $(LIST)
endif

ifdef SHARDS
SIGS := $(SHARDS:=.minisig)
FIRST := $(firstword $(SHARDS))

$(SHARDS) &: $(GGUF)
	$(FMT_SHARD) split -q -f --max-tensors $(SHARD_TENSORS) -o $(PREFIX) $<

$(SIGS): %.minisig: $(GGUF) $(SECKEY) | %
	$(FMT_SIGN) sign -q -s $(SECKEY) $(SIGN_FLAGS) $*

$(SET_REPORT): $(SHARDS) $(SIGS) $(PUBKEY)
	$(call into_target,$(FMT_VERIFY) -p $(PUBKEY) $(FIRST))

$(BUNDLE): $(SET_REPORT)
	$(FMT_SHARD) pack -q -f $(FIRST) -o $@

$(BUNDLE).minisig: $(BUNDLE) $(SECKEY)
	$(FMT_SIGN) sign -q -s $(SECKEY) $(SIGN_FLAGS) $<

$(REPORT): $(BUNDLE).minisig $(PUBKEY)
	$(call into_target,$(FMT_VERIFY) -p $(PUBKEY) $(FIRST) $(BUNDLE))

verify: $(BUNDLE).minisig
	$(FMT_VERIFY) -p $(PUBKEY) $(FIRST) $(BUNDLE)
endif

clean:
	rm -f $(GGUF) $(LIST) $(SET_REPORT) $(REPORT) $(BUNDLE) $(BUNDLE).minisig \
		$(wildcard $(PREFIX)-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].gguf*) \
		$(wildcard $(OUT)/$(NAME)*.tmp)
