// The --json view of a trace: the public contract of docs/json.md.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "attnwalk/trace.hpp"
#include "section.hpp"

namespace attnwalk::app {

// How --json writes inf, −∞ and NaN: as the strings "inf", "-inf", "nan" (the default),
// as null, or as Python's literals Infinity, -Infinity, NaN (not JSON, but what
// json.loads reads, so that torch.tensor(json.loads(...)) works).
enum class NonFinite { string, null, literal };

// The document's "format_version": raised when an id, key or meaning changes (docs/json.md,
// "Changes"). 2: positions are *_index params (0-based), step ids count from 1.
constexpr unsigned json_format_version = 2;

// `packed` (the --html page's form, not --json's): each step's data of 64 values or more,
// unless whole numbers, as {"f32": "<base64>"}, the float32 bits of its values in row-major
// order, 4 little-endian bytes each: 5⅓ characters a number where the text takes about 10,
// every bit kept (inf and NaN included).
//
// `npy_dir` (--npy DIR): each step's tensor is in DIR/NAME (npy_file_names), and the step
// says so ("npy": "DIR/NAME") in place of its "data".
void render_json(const Trace& trace, std::ostream& out, NonFinite non_finite = NonFinite::string, bool packed = false,
                 const std::string& npy_dir = "");

// The file each step's tensor goes to under --npy: its id, with any character but letters,
// digits, '.', '_' and '-' as '_', then ".npy" (a repeated id gets _2, _3, …).
std::vector<std::string> npy_file_names(const Trace& trace);

void render_json(const std::vector<Section>& sections, std::ostream& out, NonFinite non_finite = NonFinite::string);

// Steps alone, as a JSON array of the same step objects (the page's written-out cells).
void render_steps_json(const std::vector<Step>& steps, std::ostream& out, bool packed = false);

}  // namespace attnwalk::app
