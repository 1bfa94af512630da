package com.acme.imports;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Reads the partner product feeds (CSV with a header row) dropped into the import folder. */
public final class FeedReader {

    private final Path importDir;

    public FeedReader(Path importDir) {
        this.importDir = importDir;
    }

    /** The data rows of one feed, split on commas; the header row is skipped. */
    public List<String[]> rows(Path feed) throws IOException {
        List<String[]> rows = new ArrayList<>();
        try (BufferedReader reader = Files.newBufferedReader(feed, StandardCharsets.UTF_8)) {
            String header = reader.readLine();
            if (header == null) {
                return rows;
            }
            String line;
            while ((line = reader.readLine()) != null) {
                rows.add(line.split(",", -1));
            }
        }
        return rows;
    }
}
