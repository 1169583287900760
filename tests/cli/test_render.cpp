// The renderers of app/: --format torch against PyTorch's own repr(); the page draws what
// the trace holds; one value prints the same in every view.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "render/explore.hpp"
#include "render/figure.hpp"
#include "render/render_html.hpp"
#include "render/text.hpp"
#include "render/render_json.hpp"
#include "render/render_text.hpp"
#include "render/render_torch.hpp"
#include "test_util.hpp"

namespace {

// The explorer's view value and its keys, for the tests of press.
using attnwalk::app::ExploreKey;
using attnwalk::app::ExploreShape;
using attnwalk::app::ExploreView;
using attnwalk::app::press;

attnwalk::Tensor tensor_of(const nlohmann::json& j) {
    attnwalk::Tensor t;
    t.shape = j.at("shape").get<std::vector<std::size_t>>();
    for (const auto& v : j.at("data"))
        t.data.push_back(v.is_string() ? (v == "nan" ? NAN : v == "inf" ? INFINITY : -INFINITY) : v.get<float>());
    return t;
}

// The JSON document of the page's script element `id` ('<' is written \u003c in it).
nlohmann::json page_json(const std::string& page, const std::string& id) {
    const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
    const std::size_t from = page.find(open);
    REQUIRE(from != std::string::npos);
    const std::size_t begin = from + open.size(), end = page.find("</script>", begin);
    REQUIRE(end != std::string::npos);
    return nlohmann::json::parse(page.substr(begin, end - begin));
}

// Three tokens; scores of two heads with the causal mask (−∞ above the diagonal), a NaN, a
// value past 1e10 and values that round at the fourth decimal; the weights of one head.
attnwalk::Trace small_trace() {
    attnwalk::Trace trace;
    trace.command = "test";
    trace.tokens = {"Your", "<b>journey", "starts"};
    const float inf = std::numeric_limits<float>::infinity();
    attnwalk::Step scores;
    scores.id = "scores";
    scores.tensor.shape = {2, 3, 3};
    scores.tensor.data = {0.12345f, -inf, -inf, 1.5f, -2.00005f, -inf, std::nanf(""), 3.4e10f, 0.99995f,
                          -0.5f, -inf, -inf, 2.25f, 7.0f, -inf, 0.0f, -1e-5f, 12.345678f};
    scores.axes = {attnwalk::Axis::head, attnwalk::Axis::token, attnwalk::Axis::token};
    scores.mask = attnwalk::CellMask{};
    scores.may_be_non_finite = true;
    trace.steps.push_back(scores);
    attnwalk::Step weights;
    weights.id = "weights";
    weights.tensor.shape = {3, 3};
    weights.tensor.data = {1.0f, 0.0f, 0.0f, 0.123456f, 0.876544f, 0.0f, 0.2f, 0.3f, 0.5f};
    weights.axes = {attnwalk::Axis::token, attnwalk::Axis::token};
    weights.row_sum.shape = {3};
    weights.row_sum.data = {1.0f, 1.0f, 1.0f};
    trace.steps.push_back(weights);
    return trace;
}

}  // namespace

TEST_SUITE("render") {
    TEST_CASE("render.the_pages_cells_and_labels_are_the_traces") {
        using namespace attnwalk::app;
        const attnwalk::Trace trace = small_trace();
        for (int precision : {4, 6}) {
            CAPTURE(precision);
            const std::string page = html_of(trace, ColorScale::automatic, precision);
            const auto doc = page_json(page, "figures");
            REQUIRE(doc.at("steps").size() == trace.steps.size());
            CHECK(doc.at("start") == 1);  // the weights, as --svg and the explorer open on
            for (std::size_t i = 0; i < trace.steps.size(); ++i) {
                CAPTURE(i);
                const auto& page_figure = doc.at("steps").at(i);
                const Figure f = figure_of(trace, i, ColorScale::automatic);
                CHECK(page_figure.at("step") == i);
                CHECK(page_figure.at("row_labels") == f.row_labels);
                CHECK(page_figure.at("col_labels") == f.col_labels);
                CHECK(page_figure.at("row_labels").at(1) == "<b>journey");  // the trace's token, as it is
                for (std::size_t p = 0; p < f.panels; ++p)
                    for (std::size_t r = 0; r < f.rows; ++r)
                        for (std::size_t c = 0; c < f.cols; ++c) {
                            const std::size_t k = r * f.cols + c;
                            const float v = trace.steps[i].tensor.data[(p * f.rows + r) * f.cols + c];
                            const auto& cells = page_figure.at("cells").at(p);
                            CHECK(cells.at("text").at(k) == value_text(v, precision));
                            CHECK((cells.at("colour").at(k) == -1) == f.hidden(p, r, c));  // masked: not coloured
                        }
            }
            const auto& scores = doc.at("steps").at(0);
            CHECK(scores.at("cells").at(0).at("text").at(1) == "-inf");  // as the --json writer and the text view write it
            CHECK(scores.at("cells").at(0).at("text").at(6) == "nan");
            CHECK(scores.at("cells").at(0).at("text").at(7) == value_text(3.4e10f, precision));  // scientific, as in the text view
            CHECK(scores.at("titles") == nlohmann::json::array({"head 1", "head 2"}));
            CHECK(scores.at("row_names").at(2) == "query 3 “starts”");
            CHECK(scores.at("col_names").at(0) == "key 1 “Your”");
        }
        // The script draws: no number is formatted and no scale worked out in it.
        const std::string page = html_of(trace);
        for (const char* computes : {"toFixed", "toExponential", "toPrecision", "Math.abs", "first_row", "f.lo[", "row_top"})
            CHECK_MESSAGE(page.find(computes) == std::string::npos, computes);
    }

    TEST_CASE("render.a_value_prints_the_same_in_text_svg_page_and_explorer") {
        using namespace attnwalk::app;
        attnwalk::Trace trace = small_trace();
        trace.steps.erase(trace.steps.begin());  // the weights alone: what --svg draws
        for (int precision : {4, 6}) {
            CAPTURE(precision);
            TextOptions options;
            options.precision = precision;
            std::ostringstream text;
            render_text(trace, options, text);
            const std::string svg = svg_of_weights(trace, options);
            const auto cells = page_json(html_of(trace, ColorScale::automatic, precision), "figures").at("steps").at(0).at("cells").at(0);
            const Figure figure = figure_of(trace, 0, ColorScale::automatic, PanelScale::apart);
            for (std::size_t k = 0; k < 9; ++k) {
                const std::string written = value_text(trace.steps[0].tensor.data[k], precision);
                CAPTURE(written);
                CHECK(cells.at("text").at(k) == written);
                ExploreView cursor;
                cursor.row = k / 3;
                cursor.col = k % 3;
                const auto lines = panel_lines(trace, figure, cursor, 60, precision);
                CHECK(std::find(lines.begin(), lines.end(), "> weights  " + written) != lines.end());  // the cell in each step
                CHECK(text.str().find(" " + written) != std::string::npos);
                CHECK(svg.find(": " + written + "</title>") != std::string::npos);  // the cell's hover text
                CHECK(svg.find(">" + written + "</text>") != std::string::npos);    // the number in the cell
            }
        }
        CHECK(value_text(0.123456f, 4) == "0.1235");
        CHECK(value_text(3.4e38f, 4) == "3.4000e+38");
    }


    TEST_CASE("render.torch_repr_matches_pytorch") {
        const auto golden = nlohmann::json::parse(test::read_file(test::source_path("tests/golden/torch_repr.json")));
        for (const auto& g : golden.at("tensors")) {
            const std::string expected = g.at("repr");
            INFO("expected:\n" << expected);
            CHECK(attnwalk::app::torch_repr(tensor_of(g)) == expected);
        }
    }

    TEST_CASE("render.whole_numbers_print_without_decimals_and_huge_ones_in_scientific_notation") {
        attnwalk::Trace trace;
        trace.command = "test";
        attnwalk::Step table;
        table.id = "table";
        table.tensor.shape = {2, 3};
        table.tensor.data = {2, 1, 3.4e38f, 10, 12, -0.25f};
        table.tensor.integer_columns = 2;  // layer, head, then a measured number
        table.axes = {attnwalk::Axis::rank, attnwalk::Axis::feature};
        table.labels = {"layer", "head", "value"};
        trace.steps.push_back(table);
        std::ostringstream text, json;
        attnwalk::app::render_text(trace, {}, text);
        CAPTURE(text.str());
        CHECK(text.str().find("3.4000e+38") != std::string::npos);  // not 39 digits
        CHECK(text.str().find("-0.2500") != std::string::npos);
        CHECK(text.str().find("2.0000") == std::string::npos);
        CHECK(text.str().find("1.      2     1") != std::string::npos);  // rank 1., layer 2, head 1
        attnwalk::app::render_json(trace, json);
        const auto doc = nlohmann::json::parse(json.str());
        const auto& data = doc.at("steps").at(0).at("data");
        CHECK(data.at(1).at(0).is_number_unsigned());
        CHECK(data.at(1).at(0) == 10);
        CHECK(data.at(1).at(2).is_number_float());
        CHECK(doc.at("steps").at(0).at("axes").at(0) == "rank");
    }

    TEST_CASE("render.explore_keys_move_the_view_within_each_step") {
        // step 0: 2 layers × 3 heads of 4×4; step 1: one 4×2 table (no heads)
        const std::vector<ExploreShape> shapes{{6, 3, 4, 4}, {1, 1, 4, 2}};
        ExploreView v;
        v = press(v, ExploreKey::up, shapes);
        CHECK(v.row == 0);  // stays inside
        for (int k = 0; k < 9; ++k) v = press(v, ExploreKey::down, shapes);
        CHECK(v.row == 3);
        v = press(press(press(v, ExploreKey::right, shapes), ExploreKey::right, shapes), ExploreKey::right, shapes);
        CHECK(v.col == 3);
        v = press(v, ExploreKey::next_head, shapes);
        CHECK(v.panel == 1);  // layer 1, head 2
        v = press(press(v, ExploreKey::next_head, shapes), ExploreKey::next_head, shapes);
        CHECK(v.panel == 0);  // heads wrap within the layer
        v = press(v, ExploreKey::previous_head, shapes);
        CHECK(v.panel == 2);
        v = press(v, ExploreKey::next_layer, shapes);
        CHECK(v.panel == 5);  // layer 2, head 3
        v = press(v, ExploreKey::scroll_down, shapes);
        CHECK(v.scroll == 1);
        v = press(v, ExploreKey::next_step, shapes);  // the table: one panel, two columns
        CHECK(v.step == 1);
        CHECK(v.panel == 0);
        CHECK(v.col == 1);
        CHECK(v.row == 3);
        CHECK(v.scroll == 0);  // another cell: the explanation from its start
        v = press(v, ExploreKey::next_step, shapes);
        CHECK(v.step == 0);  // steps wrap
        v = press(v, ExploreKey::help, shapes);
        CHECK(v.help);
        CHECK_FALSE(press(v, ExploreKey::other, shapes).quit);
        CHECK(press(v, ExploreKey::quit, shapes).quit);
    }

    TEST_CASE("render.explore_list_of_keys_closes_with_question_mark_or_esc_and_lists_what_acts") {
        const std::vector<ExploreShape> shapes{{6, 3, 4, 4}, {1, 1, 4, 2}};
        ExploreView v = press(ExploreView{}, ExploreKey::help, shapes);
        REQUIRE(v.help);
        CHECK_FALSE(press(v, ExploreKey::help, shapes).help);  // ? again closes it
        const ExploreView closed = press(v, ExploreKey::escape, shapes);
        CHECK_FALSE(closed.help);  // Esc closes it, and does not quit while it is shown
        CHECK_FALSE(closed.quit);
        CHECK(press(closed, ExploreKey::escape, shapes).quit);  // Esc without the list quits, as before
        CHECK(press(v, ExploreKey::quit, shapes).quit);         // q quits with the list shown
        const ExploreView stepped = press(v, ExploreKey::next_step, shapes);
        CHECK(stepped.step == 1);
        CHECK_FALSE(stepped.help);  // a key that acts: the new step is shown, not the list over it
        CHECK_FALSE(press(v, ExploreKey::down, shapes).help);
        CHECK(press(v, ExploreKey::other, shapes).help);  // a key that does nothing leaves the list
        // the list names only the keys that act on the step shown, and how to close it
        const auto joined = [](const std::vector<std::string>& lines) {
            std::string all;
            for (const auto& l : lines) all += l + "\n";
            return all;
        };
        const std::string one = joined(attnwalk::app::key_list({1, 1, 6, 6}, 1, false));
        CHECK(one.find("l / L") == std::string::npos);
        CHECK(one.find("h / H") == std::string::npos);
        CHECK(one.find("s / S") == std::string::npos);
        CHECK(one.find("PgDn") == std::string::npos);
        CHECK(one.find("? or Esc         close this list") != std::string::npos);
        CHECK(one.find("q, Ctrl-C        quit") != std::string::npos);
        const auto all_lines = attnwalk::app::key_list({24, 2, 6, 6}, 5, true);
        const std::string all = joined(all_lines);
        for (const char* key : {"s / S (Tab)", "h / H", "l / L", "PgDn / PgUp", "Home / End", "? or Esc"}) CHECK_MESSAGE(all.find(key) != std::string::npos, key);
        for (const auto& l : all_lines) CHECK(attnwalk::app::width(l) <= 42);  // inside the box
        // a step of 4 heads of one layer: h/H, no l/L (the key bar says the same)
        const std::string heads = joined(attnwalk::app::key_list({4, 4, 6, 6}, 3, false));
        CHECK(heads.find("h / H") != std::string::npos);
        CHECK(heads.find("l / L") == std::string::npos);
        CHECK(attnwalk::app::key_bar({4, 4, 6, 6}, 3, false).find("l/L") == std::string::npos);
    }

    TEST_CASE("render.explore_opens_on_the_layer_and_head_named_and_keeps_them_across_steps") {
        using namespace attnwalk::app;
        // the model view: every layer's heads (2 layers × 2 heads), then the shown layer's weights
        // (2 heads); the command named --layer 2 --head 2 (layer_index 1, head_index 1)
        attnwalk::Trace trace;
        trace.tokens = {"a", "b"};
        attnwalk::Step grid;
        grid.id = "attention_grid";
        grid.tensor.shape = {2, 2, 2, 2};
        grid.tensor.data.assign(16, 0.5f);
        grid.axes = {attnwalk::Axis::layer, attnwalk::Axis::head, attnwalk::Axis::token, attnwalk::Axis::token};
        grid.heads_grid = true;
        attnwalk::Step weights;
        weights.id = "weights";
        weights.tensor.shape = {2, 2, 2};
        weights.tensor.data.assign(8, 0.5f);
        weights.axes = {attnwalk::Axis::head, attnwalk::Axis::token, attnwalk::Axis::token};
        trace.steps = {weights, grid};
        trace.set_param("layer_index", attnwalk::Index{{1}, false, ""});
        trace.set_param("head_index", attnwalk::Index{{1}, false, ""});
        const Figure fw = figure_of(trace, 0, ColorScale::automatic, PanelScale::apart);
        const Figure fg = figure_of(trace, 1, ColorScale::automatic, PanelScale::apart);
        REQUIRE(opening_step(trace) == std::optional<std::size_t>(1));  // the grid
        CHECK(opening_panel(trace, fg) == 3);  // layer 2, head 2: not layer 1
        CHECK(fg.panel_names[3] == "layer 2, head 2");
        CHECK(opening_panel(trace, fw) == 1);  // head 2 of the one layer shown
        const std::vector<ExploreShape> shapes{explore_shape(fw), explore_shape(fg)};
        CHECK(shapes[0].first_layer == 1);
        CHECK(shapes[1].first_layer == 0);
        ExploreView v;
        v.step = 1;
        v.panel = 3;
        v = press(v, ExploreKey::previous_step, shapes);  // to the shown layer's weights: layer 2 is there, head 2 too
        CHECK(v.step == 0);
        CHECK(v.panel == 1);
        v = press(v, ExploreKey::next_step, shapes);  // back on the grid: layer 2, head 2
        CHECK(v.panel == 3);
        v.panel = 0;                                  // layer 1, head 1 of the grid
        v = press(v, ExploreKey::previous_step, shapes);
        CHECK(v.panel == 0);                          // layer 1 is not in the weights: its first head
        // without --head: the first head of the layer named
        trace.params.pop_back();
        CHECK(opening_panel(trace, fg) == 2);
        // without --layer (a lesson): the first panel
        trace.params.clear();
        CHECK(opening_panel(trace, fg) == 0);
    }

    TEST_CASE("render.explore_help_lists_every_key_the_explorer_reads") {
        std::ostringstream out, err;
        const char* argv[] = {"attnwalk", "explore", "--help"};
        REQUIRE(attnwalk::app::run_cli(3, argv, out, err) == 0);
        const std::string help = out.str();
        // every key of the explorer's own list, on a step where all of them act (PgDn included)
        for (const std::string& line : attnwalk::app::key_list({4, 2, 3, 3}, 2, true)) {
            const std::string keys = line.substr(0, line.find("  "));
            if (keys.empty() || keys == "? or Esc") continue;  // the blank line; closing the list is said in words
            CAPTURE(keys);
            CHECK(help.find("\n  " + keys) != std::string::npos);  // at a line's start, as listed
        }
        CHECK(help.find("PgDn / PgUp") != std::string::npos);
        CHECK(help.find("? or Esc closes it") != std::string::npos);
        std::istringstream lines(help);
        for (std::string l; std::getline(lines, l);) CHECK_MESSAGE(attnwalk::app::width(l) <= 80, l);
    }

    // Two tokens: a mask that says what its values mean (Step::legend), and weights that do not.
    attnwalk::Trace mask_and_weights() {
        attnwalk::Trace trace;
        trace.tokens = {"a", "b"};
        attnwalk::Step mask;
        mask.id = "mask";
        mask.tensor.shape = {2, 2};
        mask.tensor.data = {1, 0, 1, 1};
        mask.axes = {attnwalk::Axis::token, attnwalk::Axis::token};
        mask.legend = "1 = visible, 0 = masked";
        attnwalk::Step weights = mask;
        weights.id = "weights";
        weights.legend.clear();
        weights.tensor.data = {1, 0, 0.25f, 0.75f};
        trace.steps = {mask, weights};
        return trace;
    }

    TEST_CASE("render.explore_says_what_a_mask_value_means") {
        const attnwalk::Trace trace = mask_and_weights();
        attnwalk::app::ExploreView v;
        v.row = 1;  // query 2, key 1
        const auto lines = attnwalk::app::panel_lines(trace, attnwalk::app::figure_of(trace, 1, attnwalk::app::ColorScale::automatic), v, 60);
        CHECK(std::find(lines.begin(), lines.end(), "  mask  1.0000 (1 = visible, 0 = masked)") != lines.end());
        CHECK(std::find(lines.begin(), lines.end(), "> weights  0.2500") != lines.end());  // a step without a legend: its number alone
        // on the mask itself, at the panel's narrow width: wrapped, still said
        const auto narrow = attnwalk::app::panel_lines(trace, attnwalk::app::figure_of(trace, 0, attnwalk::app::ColorScale::automatic), v, 24);
        std::string all;  // the lines joined, their indents as one space
        for (const auto& l : narrow) all += " " + l.substr(std::min(l.find_first_not_of(' '), l.size()));
        CHECK(all.find("> mask  1.0000 (1 = visible, 0 = masked)") != std::string::npos);
    }

    TEST_CASE("render.the_page_says_what_a_mask_value_means") {
        const attnwalk::Trace trace = mask_and_weights();
        const auto figures = page_json(attnwalk::app::html_of(trace), "figures").at("steps");
        CHECK(figures.at(0).at("meaning") == "1 = visible, 0 = masked");  // the page writes it where the mask is drawn
        CHECK_FALSE(figures.at(1).contains("meaning"));  // a step without a legend: its numbers alone
    }

    // Issue 57 item 7: the explorer's heatmap uses the screen: with 8 tokens at 80×24 every
    // key is labelled (abbreviated, on two rows), at 120×40 the cells are larger and hold
    // their values; a long title is the step's own, not its id alone.
    TEST_CASE("render.explore_labels_every_key_and_grows_with_the_screen") {
        attnwalk::Trace trace;
        trace.tokens = {"<|begin_of_text|>", "t", "he", "␣cat", "␣sat", "␣on", "␣the", "␣mat"};
        attnwalk::Step w;
        w.id = "weights";
        w.title = "Causal attention weights";
        w.tensor.shape = {8, 8};
        for (std::size_t r = 0; r < 8; ++r)
            for (std::size_t c = 0; c < 8; ++c) w.tensor.data.push_back(c <= r ? 1.0f / static_cast<float>(r + 1) : 0.0f);
        w.axes = {attnwalk::Axis::token, attnwalk::Axis::token};
        trace.steps = {w};
        const attnwalk::app::Figure f = attnwalk::app::figure_of(trace, 0, attnwalk::app::ColorScale::automatic);
        const auto small = attnwalk::app::explore_layout(f, 80, 24), large = attnwalk::app::explore_layout(f, 120, 40);
        for (const auto& l : {small, large}) {
            CHECK(l.cols_fit >= 8);  // every key on screen
            CHECK(l.rows_fit >= 8);
            const std::size_t room = l.label_rows == 1 ? l.cell_w - 1 : 2 * l.cell_w - 1;
            CHECK(room >= 3);
            for (std::size_t c = 0; c < 8; ++c) {
                const std::string label = attnwalk::app::key_label(f, c, room);
                CAPTURE(label);
                CHECK(!label.empty());
                CHECK(attnwalk::app::width(label) <= room);
            }
            CHECK(l.panel_x + l.panel_w <= (&l == &small ? 80 : 120));
            CHECK(l.panel_w >= 38);  // the written-out text keeps room
        }
        CHECK(attnwalk::app::key_label(f, 0, 5) == "<|be…");
        // w: the explanation over the whole width, and back; listed where the explanation has pages
        ExploreView v;
        const std::vector<ExploreShape> shapes{attnwalk::app::explore_shape(f)};
        const ExploreView wide = press(v, ExploreKey::wide, shapes);
        CHECK(wide.wide);
        CHECK_FALSE(press(wide, ExploreKey::wide, shapes).wide);
        std::string keys;
        for (const auto& line : attnwalk::app::key_list(shapes[0], 1, true)) keys += line + "\n";
        CHECK(keys.find("w                explanation full width") != std::string::npos);
        CHECK(large.cell_w * large.cell_h >= 2 * small.cell_w * small.cell_h);  // the heatmap grows with the screen
        CHECK(large.numbers);
        CHECK(large.panel_w > small.panel_w);
    }

    TEST_CASE("render.explore_names_the_cell_and_its_path_through_the_steps") {
        attnwalk::Trace trace;
        trace.tokens = {"a", "b", "c"};
        for (const char* id : {"scores", "weights"}) {
            attnwalk::Step s;
            s.id = id;
            s.tensor.shape = {2, 2, 2};
            s.tensor.data = {1, 2, 3, 4, 5, 6, 7, 8};
            s.axes = {attnwalk::Axis::head, attnwalk::Axis::token, attnwalk::Axis::token};
            trace.steps.push_back(s);
        }
        attnwalk::Step block;  // a block of keys from token 2 on: the same cell at its own column
        block.id = "block2.scores";
        block.tensor.shape = {2, 1};
        block.tensor.data = {9, 10};
        block.axes = {attnwalk::Axis::token, attnwalk::Axis::token};
        block.first_key = 1;
        trace.steps.push_back(block);
        const auto steps = attnwalk::app::explorable_steps(trace);
        REQUIRE(steps.size() == 3);
        attnwalk::app::ExploreView v;
        v.step = 1;
        v.panel = 1;
        v.row = 1;
        v.col = 0;
        const attnwalk::app::Figure f = attnwalk::app::figure_of(trace, steps[1], attnwalk::app::ColorScale::automatic);
        const auto lines = attnwalk::app::panel_lines(trace, f, v, 40);
        REQUIRE(lines.size() >= 6);
        CHECK(lines[0] == "query 2 \"b\", key 1 \"a\"");  // counted from 1
        CHECK(lines[1] == "head 2");
        CHECK(lines[4] == "  scores  7.0000");
        CHECK(lines[5] == "> weights  7.0000");
        CHECK(lines.size() == 6);  // block2.scores holds keys 2 on: not this cell (key 1), and head 2 is not in it
        v.col = 1;  // key 2 of head 1: block2.scores holds it, at its own column 1
        v.panel = 0;
        const auto second = attnwalk::app::panel_lines(trace, f, v, 40);
        CHECK(std::find(second.begin(), second.end(), "  block2.scores (at 2,1)  10.0000") != second.end());
        // long lines wrap at spaces, continuation lines indented
        const auto wrapped = attnwalk::app::wrap_line("    journey·Your = 0.5500·0.4300 + 0.8700·0.1500 + 0.6600·0.8900 = 0.9544", 30);
        REQUIRE(wrapped.size() >= 3);
        for (const auto& l : wrapped) CHECK(attnwalk::app::width(l) <= 30);
        CHECK(wrapped[1].rfind("      ", 0) == 0);
        CHECK(attnwalk::app::key_bar({1, 1, 6, 6}, 5, false) == "arrows cell · s/S step · ? keys · q quit");
        CHECK(attnwalk::app::key_bar({24, 2, 6, 6}, 5, true) == "arrows cell · s/S step · h/H head · l/L layer · PgDn more · ? keys · q quit");
    }
}
