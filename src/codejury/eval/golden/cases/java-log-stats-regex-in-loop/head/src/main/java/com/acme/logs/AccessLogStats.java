package com.acme.logs;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Aggregates nginx access log lines (combined format) for the hourly traffic report. */
public final class AccessLogStats {

    private static final Pattern REQUEST =
            Pattern.compile("^(\\S+) \\S+ \\S+ \\[[^\\]]+\\] \"(\\S+) (\\S+) [^\"]*\" (\\d{3}) (\\d+|-)");

    private AccessLogStats() {}

    /** Number of requests per HTTP status code; lines that do not parse are skipped. */
    public static Map<Integer, Long> countByStatus(List<String> lines) {
        Map<Integer, Long> counts = new HashMap<>();
        for (String line : lines) {
            Matcher m = REQUEST.matcher(line);
            if (m.find()) {
                counts.merge(Integer.parseInt(m.group(4)), 1L, Long::sum);
            }
        }
        return counts;
    }

    /**
     * Number of requests per path, for the paths matching {@code pathGlob} ({@code *} matches
     * within one path segment, e.g. {@code /api/*}). Runs over each hourly file, millions of lines.
     */
    public static Map<String, Long> countByPath(List<String> lines, String pathGlob) {
        Map<String, Long> counts = new HashMap<>();
        for (String line : lines) {
            Matcher m = REQUEST.matcher(line);
            if (!m.find()) {
                continue;
            }
            String path = m.group(3);
            Pattern wanted = Pattern.compile(globToRegex(pathGlob));
            if (wanted.matcher(path).matches()) {
                counts.merge(path, 1L, Long::sum);
            }
        }
        return counts;
    }

    private static String globToRegex(String glob) {
        String[] parts = glob.split("\\*", -1);
        StringBuilder regex = new StringBuilder(Pattern.quote(parts[0]));
        for (int i = 1; i < parts.length; i++) {
            regex.append("[^/]*").append(Pattern.quote(parts[i]));
        }
        return regex.toString();
    }
}
