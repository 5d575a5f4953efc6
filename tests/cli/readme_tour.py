#!/usr/bin/env python3
"""Run the console blocks of one README section as a reader would, and compare what they print.

usage: readme_tour.py README SECTION WORKDIR

Every line of a ```console block that starts with "$ " is a command; it runs in bash in WORKDIR
(with the environment this script was given), and what it prints (standard output and standard
error, as they come) must equal the lines shown under it, up to the next command or the end of the block, the
blank lines at the end aside. In a shown line, "..." stands for any text; a shown line that is
"..." alone stands for any number of lines. A command with no lines under it must print nothing.
The commands of one section run in order in the same folder, so each sees what the ones before
it wrote. Prints one paragraph per difference and exits 1 when there is any.
"""
import re
import subprocess
import sys


def section_blocks(readme, title):
    """The console blocks of the '## title' section: lists of lines."""
    blocks, block, inside = [], None, False
    for line in open(readme, encoding="utf-8").read().split("\n"):
        if line.startswith("## "):
            inside = line[3:].strip() == title
            continue
        if not inside:
            continue
        if block is None and line.strip() == "```console":
            block = []
        elif block is not None and line.strip() == "```":
            blocks.append(block)
            block = None
        elif block is not None:
            block.append(line)
    return blocks


def steps(block):
    """(command, shown lines) of each '$ ' line of a block."""
    out = []
    for line in block:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
        elif line.strip():
            raise SystemExit(f"readme_tour: text before the first command of a block: {line!r}")
    for _, shown in out:
        while shown and not shown[-1].strip():
            shown.pop()
    return out


def line_pattern(shown):
    return "".join(".*" if part == "..." else re.escape(part) for part in re.split(r"(\.\.\.)", shown))


def matches(shown, got):
    """Whether the printed lines match the shown ones ("..." alone: any number of lines)."""
    pattern = "".join("(?:.*\n)*?" if s == "..." else line_pattern(s) + "\n" for s in shown)
    return re.fullmatch(pattern, "".join(g + "\n" for g in got)) is not None


def main():
    readme, title, workdir = sys.argv[1:4]
    blocks = section_blocks(readme, title)
    if not blocks:
        raise SystemExit(f"readme_tour: no console block in section {title!r} of {readme}")
    failures = 0
    for block in blocks:
        for command, shown in steps(block):
            run = subprocess.run(["bash", "-c", command], cwd=workdir, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
            got = run.stdout.split("\n")
            while got and not got[-1].strip():
                got.pop()
            if not matches(shown, got):
                failures += 1
                print(f"$ {command}\n  shown:\n" + "".join(f"    {s}\n" for s in shown) +
                      f"  printed (exit {run.returncode}):\n" + "".join(f"    {g}\n" for g in got))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
