#include "read_sql.h"

#include <fmt/format.h>

#include "job_rows.h"

namespace gantry {

std::string ListSql(const ListQuery& query, std::vector<std::string>* params) {
  std::string sql = fmt::format("SELECT {} FROM jobs WHERE seq > ?1", kJobColumns);
  auto param = [params](std::string value) {
    params->push_back(std::move(value));
    return fmt::format("?{}", params->size() + 2);
  };
  if (query.ns) sql += " AND namespace = " + param(*query.ns);
  if (!query.allowed_namespaces.empty()) {
    sql += " AND namespace IN (";
    for (size_t i = 0; i < query.allowed_namespaces.size(); ++i) {
      sql += (i == 0 ? "" : ", ") + param(query.allowed_namespaces[i]);
    }
    sql += ")";
  }
  if (query.queue) sql += " AND queue = " + param(*query.queue);
  if (query.phase) sql += " AND phase = " + param(std::string(JobPhaseName(*query.phase)));
  // (`cluster != ''` lets SQLite use the partial index jobs_by_cluster.)
  if (query.cluster) sql += " AND cluster != '' AND cluster = " + param(*query.cluster);
  sql += " ORDER BY seq LIMIT ?2";
  return sql;
}

}  // namespace gantry
