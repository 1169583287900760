// The --html page's template (page_template.cpp): the page is page_doctype, the generator
// line, page_head, the trace's JSON, the page's own JSON documents, page_tail.
#pragma once

namespace attnwalk::app {

extern const char* const page_doctype;  // then html_generator
extern const char* const page_head;     // ends inside <script type="application/json" id="trace">
extern const char* const page_tail;     // from the last JSON document's </script> to </html>

}  // namespace attnwalk::app
