/* wip/trace_impl.h: filled by its owner */
