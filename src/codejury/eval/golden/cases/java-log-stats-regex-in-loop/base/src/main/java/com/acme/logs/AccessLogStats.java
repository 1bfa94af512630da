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
}
