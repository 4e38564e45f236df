// The system libvips (libvips-dev, 8.14) as one Swift module, for ContentService's image variants.
// libvips's API is variadic (NULL-terminated option lists), which Swift cannot call: each function here
// is one fixed-argument call with the options spelled out. Keep this file to that; the policy (sizes,
// quality, limits) is the Swift wrapper's (Sources/YediImaging).
#ifndef YEDI_CVIPS_SHIM_H
#define YEDI_CVIPS_SHIM_H

#include <string.h>
#include <vips/vips.h>

/// Starts libvips; once per process (the Swift wrapper guarantees it). Its operation cache is off (the
/// service caches encoded variants in its own count-limited LRU), each operation uses one worker thread
/// (the service runs a few operations side by side instead), and loaders libvips marks untrusted
/// (ImageMagick, PDF, ...) are blocked: only the JPEG, PNG and WebP loaders the service sniffed for run.
static inline int yedi_vips_start(void) {
    if (VIPS_INIT("yedi")) return -1;
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_cache_set_max_files(0);
    vips_concurrency_set(1);
    vips_block_untrusted_set(TRUE);
    return 0;
}

/// The pixel size from the header alone: opening an image from a buffer reads no pixels.
static inline int yedi_vips_header(const void *buffer, size_t length, int *width, int *height) {
    VipsImage *image = vips_image_new_from_buffer(buffer, length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (!image) return -1;
    *width = vips_image_get_width(image);
    *height = vips_image_get_height(image);
    g_object_unref(image);
    return 0;
}

/// A JPEG whose longest side is at most `max_side` (never enlarged), upright (EXIF orientation applied),
/// in 8-bit sRGB with any alpha flattened on white, at `quality`, without metadata (EXIF, GPS, ICC).
/// libvips shrinks JPEGs while decoding them and streams the rest, so memory follows the output's size
/// more than the input's. `*output` is g_malloc'ed: free it with `yedi_vips_free`.
static inline int yedi_vips_jpeg_variant(
    const void *buffer, size_t length, int max_side, int quality,
    void **output, size_t *output_length, int *width, int *height
) {
    VipsImage *thumbnail = NULL, *srgb = NULL, *flat = NULL;
    if (vips_thumbnail_buffer((void *)buffer, length, &thumbnail, max_side, "height", max_side, "size",
            VIPS_SIZE_DOWN, NULL))
        return -1;
    int failed = vips_colourspace(thumbnail, &srgb, VIPS_INTERPRETATION_sRGB, NULL);
    g_object_unref(thumbnail);
    if (failed) return -1;
    VipsImage *source = srgb;
    if (vips_image_hasalpha(srgb)) {
        double white[] = {255, 255, 255};
        VipsArrayDouble *background = vips_array_double_new(white, 3);
        failed = vips_flatten(srgb, &flat, "background", background, NULL);
        vips_area_unref(VIPS_AREA(background));
        if (failed) {
            g_object_unref(srgb);
            return -1;
        }
        source = flat;
    }
    failed = vips_jpegsave_buffer(
        source, output, output_length, "Q", quality, "strip", TRUE, "optimize_coding", TRUE, NULL);
    *width = vips_image_get_width(source);
    *height = vips_image_get_height(source);
    if (flat) g_object_unref(flat);
    g_object_unref(srgb);
    return failed ? -1 : 0;
}

/// Encodes 8-bit interleaved pixels (`bands` 1 to 4) in the format of `suffix` (".jpg[Q=90]", ".png",
/// ".webp"): test images and the benchmark's photos. `*output` is g_malloc'ed: free it with `yedi_vips_free`.
static inline int yedi_vips_encode_pixels(
    const void *pixels, size_t size, int width, int height, int bands, const char *suffix,
    void **output, size_t *output_length
) {
    VipsImage *image = vips_image_new_from_memory(pixels, size, width, height, bands, VIPS_FORMAT_UCHAR);
    if (!image) return -1;
    int failed = vips_image_write_to_buffer(image, suffix, output, output_length, NULL);
    g_object_unref(image);
    return failed ? -1 : 0;
}

static inline void yedi_vips_free(void *pointer) { g_free(pointer); }

/// Copies libvips's (process-wide) error text into `text` and clears it.
static inline void yedi_vips_take_error(char *text, size_t capacity) {
    if (capacity == 0) return;
    strncpy(text, vips_error_buffer(), capacity - 1);
    text[capacity - 1] = 0;
    vips_error_clear();
}

#endif
