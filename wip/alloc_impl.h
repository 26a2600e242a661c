/* wip/alloc_impl.h: filled by its owner */
