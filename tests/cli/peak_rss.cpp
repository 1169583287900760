// peak_rss COMMAND [ARGS...]: runs the command (its output to /dev/null) and prints its peak
// resident set in KiB and its exit code. A process of its own because Linux counts a child's
// peak from the memory of the process it was forked from (exec keeps that high-water mark):
// forked from this small program, the command's peak is its own.
//
// Transparent huge pages are turned off for the command (PR_SET_THP_DISABLE, kept across
// exec): attnwalk advises its heap and fresh tensors for them (app/main.cpp, ops/tensor.cpp), and with them a byte touched in a
// fresh 2 MiB region counts the whole region, so the same run measured 12.07 or 14.1 MB by
// which core took which head first. In 4 KiB pages the peak is the memory the command's data
// touched, which is what the estimates it is checked against count.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: peak_rss COMMAND [ARGS...]\n");
        return 2;
    }
    const pid_t child = ::fork();
    if (child < 0) return 2;
    if (child == 0) {
        (void)::prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);  // see above; an older kernel without it measures as before
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
        ::execv(argv[1], argv + 1);
        ::_exit(127);
    }
    int status = 0;
    struct rusage usage {};
    if (::wait4(child, &status, 0, &usage) != child) return 2;
    std::printf("%ld %d\n", usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
