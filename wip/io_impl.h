/* wip/io_impl.h: filled by its owner */
