"""Files in and out: the format registry, benchmark importers (importers/) and exporters, predictions made
elsewhere (import and export), the rule for output files, building POPE sets."""
