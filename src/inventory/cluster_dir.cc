#include "gantry/inventory/cluster_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace gantry::inventory {
namespace {

namespace fs = std::filesystem;

bool IsClusterFile(const fs::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  std::error_code ec;
  return !name.starts_with(".") && entry.path().extension() == ".yaml" && entry.is_regular_file(ec);
}

// Sorted list of cluster files, or an error when the directory cannot be read.
Result<std::vector<std::string>> ListClusterFiles(const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status::Io(fmt::format("clusters dir {}: {}", dir, ec.message()));
  std::vector<std::string> files;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (IsClusterFile(*it)) files.push_back(it->path().string());
  }
  if (ec) return Status::Io(fmt::format("clusters dir {}: {}", dir, ec.message()));
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

ClusterDirLoad LoadClusterDir(const std::string& dir, const std::vector<ClusterConfig>& previous) {
  ClusterDirLoad out;
  Result<std::vector<std::string>> files = ListClusterFiles(dir);
  if (!files.ok()) {
    out.dir_status = files.status();
    out.clusters = previous;
    return out;
  }
  std::map<std::string, const ClusterConfig*> previous_by_file;
  for (const ClusterConfig& c : previous) previous_by_file[c.source_file] = &c;

  std::map<std::string, ClusterConfig> by_name;
  std::map<std::string, std::string> file_of_name;  // name -> file that defined it
  auto add = [&](const std::string& file, ClusterConfig config) -> Status {
    auto [it, inserted] = file_of_name.emplace(config.name, file);
    if (!inserted) {
      return Status::Conflict(fmt::format("{}: cluster name '{}' is already defined by {}",
                                          fs::path(file).filename().string(), config.name,
                                          fs::path(it->second).filename().string()));
    }
    by_name.emplace(config.name, std::move(config));
    return Status::Ok();
  };

  std::vector<std::pair<std::string, Result<ClusterConfig>>> loaded;
  loaded.reserve(files->size());
  for (const std::string& file : *files) loaded.emplace_back(file, LoadClusterFile(file));
  // A file that loads and still names the cluster it defined before goes
  // first: a new file naming a cluster in use is the one refused, whichever
  // sorts first. (A refused file's kept entry has no such claim: a new good
  // file of its name is the truth.)
  std::stable_partition(loaded.begin(), loaded.end(), [&](const auto& f) {
    auto prev = previous_by_file.find(f.first);
    return prev != previous_by_file.end() && f.second.ok() && f.second->name == prev->second->name;
  });
  std::vector<size_t> unkept;  // in `out.errors`: refused files without a last good entry
  for (auto& [file, config] : loaded) {
    if (config.ok()) {
      Status added = add(file, std::move(config).value());
      if (!added.ok()) out.errors.push_back({file, added, false});
      continue;
    }
    auto prev = previous_by_file.find(file);
    // The last good entry is kept only if its name is still free: another
    // file may have claimed it since (then that file's entry is the truth).
    bool kept = prev != previous_by_file.end() && add(file, *prev->second).ok();
    if (!kept) unkept.push_back(out.errors.size());
    out.errors.push_back({file, config.status(), kept});
  }
  // Once every file has claimed its name: a placeholder never takes the
  // name of an entry, whichever file sorts first.
  std::map<std::string, ClusterPlaceholder> held;
  for (size_t i : unkept) {
    const ClusterFileError& error = out.errors[i];
    std::string name = LenientClusterName(error.file);
    if (name.empty() || by_name.count(name)) continue;
    held.emplace(name, ClusterPlaceholder{name, error.file, error.status});  // the first file keeps it
  }
  // Reported in file order, whatever order they were read in.
  std::stable_sort(out.errors.begin(), out.errors.end(),
                   [](const ClusterFileError& a, const ClusterFileError& b) { return a.file < b.file; });
  // Not one cluster in use left (no file, or only files refused): far more
  // likely a directory swapped or rewritten by a deploy tool (a ConfigMap's
  // atomic swap, a sync halfway) than every cluster removed on purpose,
  // which would give every job its onClusterLoss at once. Taken as not
  // listed: the inventory stays; the refused files are told.
  const bool any_left = std::any_of(previous.begin(), previous.end(), [&](const ClusterConfig& c) {
    return by_name.count(c.name) > 0 || held.count(c.name) > 0;
  });
  if (!previous.empty() && !any_left) {
    out.dir_status = Status::Unavailable(fmt::format(
        "clusters dir {} holds no cluster file{}: a reload never empties the inventory (a directory being swapped or "
        "rewritten looks so), and the {} cluster(s) stay as they were; to remove them, remove their files while "
        "another remains, or restart the daemon",
        dir, files->empty() ? "" : " that loads with a cluster in use", previous.size()));
    out.clusters = previous;
    return out;
  }
  out.clusters.reserve(by_name.size());
  for (auto& [name, config] : by_name) out.clusters.push_back(std::move(config));
  for (auto& [name, placeholder] : held) out.placeholders.push_back(std::move(placeholder));
  return out;
}

}  // namespace gantry::inventory
