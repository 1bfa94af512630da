package com.acme.imports;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

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

    /** Number of data rows of each feed in the import folder, for the import dashboard (refreshed every minute). */
    public Map<String, Long> rowCounts() throws IOException {
        Map<String, Long> counts = new TreeMap<>();
        try (DirectoryStream<Path> feeds = Files.newDirectoryStream(importDir, "*.csv")) {
            for (Path feed : feeds) {
                BufferedReader reader = Files.newBufferedReader(feed, StandardCharsets.UTF_8);
                long dataRows = Math.max(0, reader.lines().count() - 1);
                counts.put(feed.getFileName().toString(), dataRows);
            }
        }
        return counts;
    }
}
