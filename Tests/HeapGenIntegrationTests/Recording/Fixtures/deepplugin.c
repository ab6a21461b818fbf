/*
 * deepplugin.c: a plugin that main loads with RTLD_DEEPBIND (deepmain.c), so
 * its malloc and free bind to libc's, not to a preloaded library's.
 * plugin_work: 5 blocks of 40 B, 4 freed here, the last returned to the
 * caller; plugin_free: frees a block the caller allocated.
 */
#include <stdlib.h>
#include <string.h>

void *volatile plugin_sink;

void *plugin_work(void)
{
    void *blocks[5];
    for (int i = 0; i < 5; i++) {
        blocks[i] = malloc(40);
        memset(blocks[i], i, 40);
        plugin_sink = blocks[i];
    }
    for (int i = 0; i < 4; i++) free(blocks[i]);
    plugin_sink = NULL;
    return blocks[4];
}

void plugin_free(void *p)
{
    free(p);
}
