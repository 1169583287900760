#include "test_util.hpp"

#include <cstdint>
#include <vector>

#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/work.hpp"

using namespace attnwalk;

TEST_SUITE("work") {
    TEST_CASE("work.a_product_counts_its_operations_and_operands") {
        const std::vector<float> a(3 * 5, 0.5f), b(5 * 4, 2.0f);
        std::vector<float> c(3 * 4);
        const Work before = work_so_far();
        sgemm(false, false, 3, 4, 5, 1.0f, a.data(), 5, b.data(), 4, 0.0f, c.data(), 4);
        const Work spent = work_so_far() - before;
        CHECK(spent.flop == 2.0 * 3 * 4 * 5);
        CHECK(spent.bytes == 4.0 * (3 * 5 + 5 * 4 + 3 * 4));
        CHECK(c[0] == 5.0f);
    }

    TEST_CASE("work.a_sixteen_bit_layer_counts_its_weights_as_read_every_path") {
        const std::size_t d_in = 64, d_out = 48;
        std::vector<std::uint16_t> w(d_in * d_out, 0x3F80);  // bfloat16 1.0
        for (std::size_t rows : {std::size_t{1}, std::size_t{3}, std::size_t{200}}) {  // a row, the register kernel, the widened blocks
            CAPTURE(rows);
            const Cube x = Cube::from_shape({1, rows, d_in});
            Cube xs = x;
            xs.fill(0.25f);
            const Linear layer = external_linear16(w.data(), true, d_in, d_out, d_in, true, nullptr);
            const Work before = work_so_far();
            const Cube y = project(xs, layer);
            const Work spent = work_so_far() - before;
            const double r = static_cast<double>(rows), i = static_cast<double>(d_in), o = static_cast<double>(d_out);
            CHECK(spent.flop == 2.0 * r * i * o);
            CHECK(spent.bytes == 2.0 * i * o + 4.0 * r * (i + o));  // the weights at 2 bytes, read once
            CHECK(y(0, rows - 1, d_out - 1) == 16.0f);
            if (rows == 1) {
                const Work row_before = work_so_far();
                const Mat one = project_row(layer, xs.data());
                CHECK((work_so_far() - row_before).flop == 2.0 * i * o);
                CHECK(one(0, 0) == 16.0f);
            }
        }
    }

    TEST_CASE("work.a_sixteen_bit_layer_in_x_w_layout_counts_the_same") {
        const std::size_t d_in = 32, d_out = 40, rows = 5;
        const std::vector<std::uint16_t> w(d_in * d_out, 0x3F80);  // [d_in, d_out], bfloat16 1.0
        Cube x = Cube::from_shape({1, rows, d_in});
        x.fill(0.5f);
        const Work before = work_so_far();
        const Cube y = project(x, external_linear16(w.data(), true, d_in, d_out, d_out, false, nullptr));
        const Work spent = work_so_far() - before;
        CHECK(spent.flop == 2.0 * 5 * 32 * 40);
        CHECK(spent.bytes == 2.0 * 32 * 40 + 4.0 * 5 * (32 + 40));
        CHECK(y(0, 4, 39) == 16.0f);
    }

    TEST_CASE("work.the_machine_is_measured_without_counting_it") {
        const Work before = work_so_far();
        const MachineRates rates = measure_machine();
        const Work after = work_so_far();
        CHECK(rates.flop_per_second > 0);
        CHECK(rates.bytes_per_second > 0);
        CHECK(after.flop == before.flop);
        CHECK(after.bytes == before.bytes);
        // the limit: whichever rate binds
        const MachineRates r{100.0, 10.0};
        CHECK(limit_seconds({1000.0, 50.0}, r) == 10.0);  // compute
        CHECK(limit_seconds({100.0, 50.0}, r) == 5.0);    // memory
        CHECK(limit_seconds({100.0, 50.0}, MachineRates{}) == 0.0);
    }

    TEST_CASE("work.a_lap_takes_the_work_since_its_mark") {
        Work mark = work_so_far();
        count_work(10.0, 40.0);
        const Work lap = work_since(mark);
        CHECK(lap.flop == 10.0);
        CHECK(lap.bytes == 40.0);
        CHECK(work_since(mark).flop == 0.0);
        Work sum = lap;
        sum += lap * 0.5;
        CHECK(sum.flop == 15.0);
    }
}
