"""The inspector's pages: one module per area, each a thin layer over ``omoide.Memory``."""
