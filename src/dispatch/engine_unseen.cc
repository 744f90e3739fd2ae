// Engine::DeleteUnseen: withdrawing an object that the job's view cannot
// show. Its cluster answers but keeps gantry from listing that kind (RBAC
// drift, a broken conversion webhook), or its view, current by every sign,
// has not shown an object this engine created there (a watch gone silent,
// not yet found dead: ladder.h, CreatedUnseen), so Decide has no uid to
// delete by (ladder.h, AnswersUnseen). The name is known from the job's row; what
// holds the name now is read, and deleted only if it is the job's, of an
// epoch the row covers, with its uid as the precondition: never a newer
// epoch's object, never someone else's. A NotFound that names the object
// is remembered (UnseenAsks::Found): once the row has been withdrawn for
// DecideOptions::not_found_confirms_after_ms, it confirms the object gone
// (Ladder::ReadGone), so a cancel there completes while the list is still
// refused.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gantry/common/json_path.h"
#include "gantry/dispatch/engine.h"
#include "gantry/dispatch/remote_objects.h"

namespace gantry::dispatch {

namespace {

// An answer that says nothing of the object: none at all, or the cluster
// too busy or failing for the moment (429, 5xx). Asked again at the job's
// next pass, not after the row's next wait (UnseenAsks).
bool Transient(const Result<kube::KubeReply>& reply) {
  return !reply.ok() || reply->status == 429 || reply->status >= 500;
}

}  // namespace

bool Engine::DeleteUnseen(const JobRecord& job, const Action& action, kube::KubeClient& client) {
  const std::string key = UnseenAsks::Key(job.uid, action.cluster, action.kind, action.epoch);
  // Every way out counts as the row's ask (so that a refused GET is not
  // sent again on every pass), but a transient answer's.
  struct Ask {
    Engine* engine;
    const std::string& key;
    bool transient = false;
    ~Ask() {
      if (!transient) engine->unseen_.Asked(key, engine->clock_.NowMillis());
    }
  } ask{this, key};
  if (action.path.empty()) return true;  // the template's kind has no path: nothing was created
  // Read before the GET is sent: the cluster answered after it, never before.
  const int64_t asked_ms = clock_.NowMillis();
  auto got = client.Get(action.path);
  if (metrics_) metrics_->RemoteCall(action.cluster, "get", got.ok() ? got->status : 0);
  if (Transient(got)) {
    ask.transient = true;
    spdlog::debug("dispatch: get {} in {}: {}", action.path, action.cluster,
                  got.ok() ? fmt::format("HTTP {}", got->status) : got.status().ToString());
    return false;
  }
  if (got->status == 404) {  // gone already
    unseen_.Found(key, NotFoundNames(got->body, action.name) ? asked_ms : 0);
    return true;
  }
  if (!got->ok()) {
    unseen_.Found(key, 0);
    spdlog::info("dispatch: {} {}/{} in {} is not seen there, nor read: HTTP {} {}; it is withdrawn once "
                 "the cluster lets gantry see it",
                 action.kind, action.ns, action.name, action.cluster, got->status,
                 got->error ? got->error->message : "");
    return false;
  }
  const nlohmann::json& object = got->body;
  const std::optional<int64_t> epoch = DeletableEpoch(object, job.uid, options_.decide.origin, action.epoch);
  if (!epoch) {
    // Another's object holds the name (or this job's at a newer epoch):
    // the row's object is not there, as after a 404.
    unseen_.Found(key, asked_ms);
    spdlog::info("dispatch: {} {}/{} in {} is not this job's at epoch {} or before; left alone", action.kind,
                 action.ns, action.name, action.cluster, action.epoch);
    return true;
  }
  unseen_.Found(key, 0);
  kube::DeleteOptions opts;
  opts.propagation_policy = action.foreground ? "Foreground" : "Background";
  opts.precondition_uid = JsonStringAt(object, {"metadata", "uid"});
  auto deleted = client.Delete(action.path, opts, kube::KubeClient::Body::kOnlyOnError);
  if (metrics_) metrics_->RemoteCall(action.cluster, "delete", deleted.ok() ? deleted->status : 0);
  ask.transient = Transient(deleted);
  if (!deleted.ok()) {
    spdlog::debug("dispatch: delete {} in {}: {}", action.path, action.cluster, deleted.status().ToString());
    return false;
  }
  // Gone meanwhile, or re-created (the precondition failed): done either way.
  if (deleted->ok() || deleted->status == 404 || deleted->status == 409) {
    spdlog::info("dispatch: {} {}/{} (epoch {}) deleted by name in {}, where gantry's view does not show it",
                 action.kind, action.ns, action.name, *epoch, action.cluster);
    return true;
  }
  spdlog::warn("dispatch: delete {} in {}: HTTP {} {}", action.path, action.cluster, deleted->status,
               deleted->error ? deleted->error->message : "");
  return false;
}

}  // namespace gantry::dispatch
