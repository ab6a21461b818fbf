/* Copies stdin to stdout byte for byte, writes a fixed line to stderr,
 * exits with argv[1] (default 0). read/write only. */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char buf[4096];
    ssize_t n;
    while ((n = read(0, buf, sizeof buf)) > 0) {
        ssize_t off = 0;
        while (off < n) {
            ssize_t w = write(1, buf + off, (size_t)(n - off));
            if (w <= 0) return 100;
            off += w;
        }
    }
    static const char err[] = "passthru: to stderr\n";
    if (write(2, err, sizeof err - 1) != (ssize_t)sizeof err - 1) return 101;
    return argc > 1 ? atoi(argv[1]) : 0;
}
