/* The replay driver: runs every file of the given corpus folders (or single
 * files) through the fuzz target's LLVMFuzzerTestOneInput, in sorted order,
 * so the normal (gcc) build checks the committed corpus without libFuzzer.
 * Exits 0 when every input passed, 1 when a folder was unreadable or empty;
 * a failed property aborts (the test fails) after naming the file. */
#include "fuzz_target.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "%s: read failed\n", path);
        fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    fprintf(stderr, "replay %s (%ld bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int files = 0;
    for (int a = 1; a < argc; a++) {
        struct stat sb;
        if (stat(argv[a], &sb) != 0) {
            perror(argv[a]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (run_file(argv[a]) != 0)
                return 1;
            files++;
            continue;
        }
        struct dirent **list;
        int n = scandir(argv[a], &list, NULL, by_name);
        if (n < 0) {
            perror(argv[a]);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            if (list[i]->d_name[0] != '.') {
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s", argv[a], list[i]->d_name);
                if (run_file(path) != 0)
                    return 1;
                files++;
            }
            free(list[i]);
        }
        free(list);
    }
    if (files == 0) {
        fprintf(stderr, "replay: no corpus files found\n");
        return 1;
    }
    printf("replay: %d inputs passed\n", files);
    return 0;
}
