"""memkit's teaching notebooks, shipped inside the package: `memkit notebooks DIR` copies them out."""
